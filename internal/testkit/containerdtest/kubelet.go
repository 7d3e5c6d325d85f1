package containerdtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// KubeletModule is the directory, relative to the repository's root, of
// the Go module that pins the kubelet BuildKubelet builds.
const KubeletModule = "test/kubelet"

// BuildKubelet builds the kubelet that KubeletModule pins into a temporary
// directory and returns its path. A cold build downloads and compiles
// k8s.io/kubernetes (minutes); Go's caches make later ones quick.
func BuildKubelet(t testing.TB) string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	dir := filepath.Join(filepath.Dir(strings.TrimSpace(string(gomod))), KubeletModule)
	bin := filepath.Join(t.TempDir(), "kubelet")
	cmd := exec.Command("go", "build", "-o", bin, "k8s.io/kubernetes/cmd/kubelet")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the kubelet in %s: %v\n%s", dir, err, out)
	}
	t.Logf("built the kubelet in %v", time.Since(start).Round(time.Second))
	return bin
}

// Kubelet is a kubelet in standalone mode (static pods, no API server)
// over a Containerd, with the cgroupfs driver and the Containerd's
// CgroupRoot as its cgroup root.
type Kubelet struct {
	t testing.TB
	c *Containerd
	// Dir holds its config, root, certificates, logs and Manifests.
	Dir string
	// Manifests is its static pod directory.
	Manifests string
	// NodeName is its node's name, which static pods' names end with.
	NodeName string

	cmd  *exec.Cmd
	done chan error
	// made are the directories outside Dir that the kubelet makes
	// whatever its config says, and that did not exist before it.
	made []string
}

// kubeletFixedDirs are directories a kubelet makes wherever its root is.
var kubeletFixedDirs = []string{"/var/lib/kubelet/device-plugins", "/var/log/containers"}

// StartKubelet runs the kubelet binary bin over c until the test ends.
// Its pods go at once when the test ends; what they leave is c's to
// remove.
func StartKubelet(t testing.TB, c *Containerd, bin string) *Kubelet {
	t.Helper()
	dir, err := os.MkdirTemp("", "kubelet")
	if err != nil {
		t.Fatal(err)
	}
	k := &Kubelet{t: t, c: c, Dir: dir, Manifests: filepath.Join(dir, "manifests"), NodeName: "schedstatd-node"}
	for _, d := range kubeletFixedDirs {
		if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
			k.made = append(k.made, d)
		}
	}
	t.Cleanup(k.cleanup)
	if err := os.Mkdir(k.Manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	// The kubelet wants its cgroup root to exist in every hierarchy.
	for _, h := range hierarchies() {
		if err := os.MkdirAll(filepath.Join(h, c.CgroupRoot), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(k.config()), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "kubelet.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	k.cmd = exec.Command(bin, "--config="+cfg, "--root-dir="+filepath.Join(dir, "root"),
		"--cert-dir="+filepath.Join(dir, "pki"), "--hostname-override="+k.NodeName, "--v=2")
	k.cmd.Stdout, k.cmd.Stderr = logf, logf
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k.done = make(chan error, 1)
	go func() { k.done <- k.cmd.Wait() }()
	return k
}

// config returns the kubelet's config: standalone, everything under
// k.Dir, loopback only, and what this machine needs (a kubelet on cgroup
// v1 with swap, root without CAP_SYS_RESOURCE, no iptables, no DNS).
func (k *Kubelet) config() string {
	d := k.Dir
	return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: ` + k.Manifests + `
fileCheckFrequency: 1s
syncFrequency: 5s
containerRuntimeEndpoint: unix://` + k.c.Socket + `
imageServiceEndpoint: unix://` + k.c.Socket + `
cgroupDriver: cgroupfs
cgroupRoot: ` + k.c.CgroupRoot + `
cgroupsPerQOS: true
failCgroupV1: false
failSwapOn: false
oomScoreAdj: 0
makeIPTablesUtilChains: false
localStorageCapacityIsolation: false
resolvConf: ""
enableServer: false
address: 127.0.0.1
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
podLogsDir: ` + d + `/pod-logs
volumePluginDir: ` + d + `/volume-plugins
`
}

// AddStaticPod writes a static pod manifest; the kubelet runs the pod
// within a second or two.
func (k *Kubelet) AddStaticPod(name, manifest string) {
	k.t.Helper()
	if err := os.WriteFile(filepath.Join(k.Manifests, name+".yaml"), []byte(manifest), 0o644); err != nil {
		k.t.Fatal(err)
	}
}

// Log returns the kubelet's log so far.
func (k *Kubelet) Log() string {
	b, _ := os.ReadFile(filepath.Join(k.Dir, "kubelet.log"))
	return string(b)
}

// WaitPod waits until the pod named name (a static pod's name ends with
// "-" and the node's name) in namespace runs n containers, and returns
// the pod with its QoS class's cgroup parent and the containers.
func (k *Kubelet) WaitPod(namespace, name, qos string, n int, timeout time.Duration) (*Pod, []*Container) {
	k.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		select {
		case err := <-k.done:
			k.done <- err
			k.t.Fatalf("the kubelet exited: %v\n%s", err, tail(k.Log(), 40))
		default:
		}
		if p, ctrs := k.findPod(namespace, name, qos); p != nil && len(ctrs) == n {
			return p, ctrs
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("pod %s/%s with %d running containers: not within %v\nkubelet log:\n%s", namespace, name, n, timeout, tail(k.Log(), 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// findPod returns the ready sandbox of the pod, with its running
// containers, or nil.
func (k *Kubelet) findPod(namespace, name, qos string) (*Pod, []*Container) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sr, err := k.c.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{LabelPodName: name, LabelPodNamespace: namespace},
	}})
	if err != nil || len(sr.GetItems()) != 1 {
		return nil, nil
	}
	s := sr.GetItems()[0]
	p := &Pod{Name: name, Namespace: namespace, UID: s.GetMetadata().GetUid(), QoS: qos, SandboxID: s.GetId()}
	// The cgroupfs driver names the pod's cgroup by its uid, dashes kept.
	p.CgroupParent = filepath.Join(k.c.CgroupRoot, "kubepods", qos, "pod"+p.UID)
	cr, err := k.c.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		PodSandboxId: s.GetId(),
		State:        &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	}})
	if err != nil {
		return nil, nil
	}
	var ctrs []*Container
	for _, c := range cr.GetContainers() {
		ctrs = append(ctrs, &Container{ID: c.GetId(), Name: c.GetMetadata().GetName(), ImageID: c.GetImageRef(), Pod: p})
	}
	return p, ctrs
}

// cleanup removes the static pods and waits (up to 30 s) for the kubelet
// to stop them, stops it, and removes what it made.
func (k *Kubelet) cleanup() {
	t := k.t
	if k.cmd != nil && k.cmd.ProcessState == nil {
		ents, _ := os.ReadDir(k.Manifests)
		for _, e := range ents {
			os.Remove(filepath.Join(k.Manifests, e.Name()))
		}
		for deadline := time.Now().Add(30 * time.Second); k.readySandboxes() > 0 && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
		}
		k.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-k.done:
		case <-time.After(15 * time.Second):
			t.Errorf("the kubelet did not stop within 15s of SIGTERM")
			k.cmd.Process.Kill()
			<-k.done
		}
	}
	if t.Failed() {
		t.Logf("kubelet log (end):\n%s", tail(k.Log(), 60))
	}
	var errs []error
	errs = append(errs, unmountUnder(k.Dir))
	errs = append(errs, os.RemoveAll(k.Dir))
	// The links to its containers' logs it makes in /var/log/containers,
	// whoever made that directory.
	links, _ := os.ReadDir("/var/log/containers")
	for _, l := range links {
		p := filepath.Join("/var/log/containers", l.Name())
		if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, k.Dir+"/") {
			errs = append(errs, os.Remove(p))
		}
	}
	for _, d := range k.made {
		if d == "/var/lib/kubelet/device-plugins" {
			// The kubelet leaves its device plugin registration socket.
			os.Remove(filepath.Join(d, "kubelet.sock"))
		}
		// Only if empty: a kubelet of another test may use it now.
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Logf("kubelet clean-up: %v", err)
		}
		if d == "/var/lib/kubelet/device-plugins" {
			os.Remove(filepath.Dir(d)) // if the kubelet made it too and it is empty
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Errorf("kubelet clean-up: %v", err)
	}
	if m := mountsUnder(k.Dir); len(m) > 0 {
		t.Errorf("kubelet clean-up left mounts %q", m)
	}
}

// readySandboxes returns how many ready sandboxes the containerd has, or
// 0 when it cannot tell.
func (k *Kubelet) readySandboxes() int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := k.c.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	}})
	if err != nil {
		return 0
	}
	return len(r.GetItems())
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
