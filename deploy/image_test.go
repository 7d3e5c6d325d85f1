package deploy

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/schedstatd/schedstatd/aggregate"
	"github.com/schedstatd/schedstatd/internal/imagebuild"
	"github.com/schedstatd/schedstatd/internal/testkit/containerdtest"
	"github.com/schedstatd/schedstatd/internal/testkit/testbpf"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// testVersion is the version the tests build the daemon with.
const testVersion = "v0.0.0-deploytest"

// capSysResource is CAP_SYS_RESOURCE's bit.
const capSysResource = 24

// TestImageAsDaemonSet builds the image as make image does, tagged as the
// DaemonSet names it, imports it into a real containerd (Debian's, with
// runc) with `ctr images import`, and runs it through the CRI as kubelet
// would run the DaemonSet's pod: the CRI configs are translated from
// daemonset.yaml (podToCRI), host PID, the host's /proc and cgroupfs
// read-only at the flags' paths, the capabilities, read-only root
// filesystem, seccomp, resources and OOM score it names. Two things differ
// from a node, each forced by this machine: the pod shares the host's
// network (there is no CNI), so the daemon listens on a free port rather
// than 10271; and where this machine's root lacks CAP_SYS_RESOURCE (it
// cannot give a container one it does not hold), that one is left out.
// The runtime's socket directory and the state directory are the test's.
//
// It checks what the kernel applied to the daemon's process, that it
// serves /metrics and /healthz as the probes ask, loads the task
// iterator and exit capture, labels a pod started beside it, counts that
// pod's busy container's run time as its cgroup's CPU counter does, and
// stops on SIGTERM within the grace period, writing its state.
func TestImageAsDaemonSet(t *testing.T) {
	c := containerdtest.Start(t)
	m := load(t)
	tmpl := *m.ds.Spec.Template.DeepCopy()
	ctr := &tmpl.Spec.Containers[0]

	// The image, as make image writes it.
	img, err := imagebuild.Image(imagebuild.Spec{Binary: binary(t), Arch: "amd64", Created: time.Unix(0, 0).UTC(), Labels: imagebuild.Labels(testVersion, "test", time.Unix(0, 0))})
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "image.oci.tar")
	_, tag, _ := strings.Cut(ctr.Image, ":")
	if err := imagebuild.WriteArchive(archive, img, ctr.Image, tag); err != nil {
		t.Fatal(err)
	}
	c.ImportArchive(archive, ctr.Image)

	// What differs from a node.
	tmpl.Spec.HostNetwork = true
	port := freePort(t)
	for i, a := range ctr.Args {
		if strings.HasPrefix(a, "--web.listen-address=") {
			ctr.Args[i] = fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port)
		}
	}
	ctr.Ports[0].ContainerPort = int32(port)
	if !hasCapability(t, capSysResource) {
		t.Log("this machine's root lacks CAP_SYS_RESOURCE: the container runs without it")
		add := ctr.SecurityContext.Capabilities.Add[:0]
		for _, cp := range ctr.SecurityContext.Capabilities.Add {
			if cp != "SYS_RESOURCE" {
				add = append(add, cp)
			}
		}
		ctr.SecurityContext.Capabilities.Add = add
	}
	state := t.TempDir()
	// The host's bpf filesystem, as systemd mounts it: the test's own.
	bpffs := testbpf.Mount(t)
	// With it, auto takes the kernel totals where the kernel has them.
	source, startLine := "aggregate", "task_source=aggregate"
	if err := aggregate.KernelSupports(); err != nil {
		source, startLine = "iter", "task_iterator=true"
	}
	node := criNode{
		hostPaths:    map[string]string{"/run/containerd": c.Dir, "/run/schedstatd": state, "/sys/fs/bpf": bpffs},
		memoryBytes:  memTotal(t),
		cgroupParent: c.PodCgroupParent,
		logDir:       filepath.Join(c.Dir, "pods"),
	}
	pod, err := podToCRI(tmpl, "schedstatd-x7k2p", m.ds.Namespace, containerdtest.NewUID(t), node)
	if err != nil {
		t.Fatal(err)
	}
	sandbox := c.RunPodSandbox(pod.sandbox, pod.qos)
	daemon := c.StartContainerConfig(sandbox, pod.containers[0])
	logPath := filepath.Join(pod.sandbox.LogDirectory, pod.containers[0].LogPath)
	daemonLog := func() string { b, _ := os.ReadFile(logPath); return string(b) }

	// The probes, as kubelet asks them.
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	client := &http.Client{Timeout: 10 * time.Second}
	probe := func(p *corev1.Probe) error {
		resp, err := client.Get(base + p.HTTPGet.Path)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		err := probe(ctr.ReadinessProbe)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readiness probe %s: %v\ndaemon log:\n%s", ctr.ReadinessProbe.HTTPGet.Path, err, daemonLog())
		}
	}
	pid := cgroupPID(t, daemon.CgroupID())

	t.Run("what the kernel applied", func(t *testing.T) {
		status := procStatus(t, pid)
		t.Logf("the daemon, pid %d: CapEff %s NoNewPrivs %s Seccomp %s Uid %q", pid, status["CapEff"], status["NoNewPrivs"], status["Seccomp"], status["Uid"])
		wantCaps := uint64(0)
		for _, cp := range ctr.SecurityContext.Capabilities.Add {
			wantCaps |= 1 << capBits[string(cp)]
		}
		for _, f := range []string{"CapEff", "CapPrm", "CapBnd"} {
			got, _ := strconv.ParseUint(status[f], 16, 64)
			if got != wantCaps {
				t.Errorf("%s %x, want %x (%v)", f, got, wantCaps, ctr.SecurityContext.Capabilities.Add)
			}
		}
		for f, want := range map[string]string{"NoNewPrivs": "1", "Seccomp": "2", "Uid": "0\t0\t0\t0", "Gid": "0\t0\t0\t0"} {
			if status[f] != want {
				t.Errorf("%s: %q, want %q", f, status[f], want)
			}
		}
		mounts := mountOptions(t, pid)
		for _, p := range []string{"/", "/host/proc", "/host/sys/fs/cgroup", "/run/containerd"} {
			if !strings.Contains(","+mounts[p]+",", ",ro,") {
				t.Errorf("%s mounted %q in the container, want read-only", p, mounts[p])
			}
		}
		if o := mounts["/run/schedstatd"]; !strings.Contains(","+o+",", ",rw,") {
			t.Errorf("/run/schedstatd mounted %q, want read-write", o)
		}
		dir := containerdtest.CgroupDir("memory", daemon.CgroupID())
		if got, want := readInt(t, filepath.Join(dir, "memory.limit_in_bytes")), ctr.Resources.Limits.Memory().Value(); got != want {
			t.Errorf("memory limit %d, want %d", got, want)
		}
		dir = containerdtest.CgroupDir("cpu", daemon.CgroupID())
		if got, want := readInt(t, filepath.Join(dir, "cpu.cfs_quota_us")), ctr.Resources.Limits.Cpu().MilliValue()*100; got != want {
			t.Errorf("CFS quota %d us, want %d", got, want)
		}
	})

	// A pod beside it, with a container that keeps a CPU busy.
	shop := c.RunPod("web-0", "shop", containerdtest.Burstable)
	spin := c.StartContainer(shop, "spin", containerdtest.BusyboxImage.Name, "/bin/sh", "-c", "while :; do :; done")

	scrape := func() map[string]*dto.MetricFamily {
		t.Helper()
		resp, err := client.Get(base + "/metrics")
		if err != nil {
			t.Fatalf("scrape: %v\ndaemon log:\n%s", err, daemonLog())
		}
		defer resp.Body.Close()
		parser := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := parser.TextToMetricFamilies(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return mfs
	}
	var mfs map[string]*dto.MetricFamily
	var why string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		mfs = scrape()
		why = ""
		if l := seriesOf(mfs, "container_cpu_schedstat_run_seconds_total", spin.CgroupID()); l == nil {
			why = "no series of the busy container"
		} else if l["container"] != "spin" || l["pod"] != shop.Name || l["namespace"] != shop.Namespace || l["image"] != spin.Image {
			why = fmt.Sprintf("the busy container labelled %v", l)
		}
		if why == "" || time.Now().After(deadline) {
			break
		}
	}
	if why != "" {
		t.Fatalf("%s\ndaemon log:\n%s", why, daemonLog())
	}

	t.Run("self metrics", func(t *testing.T) {
		for _, g := range []struct {
			name, label string
			want        float64
		}{
			{"schedstatd_runtime_up", "", 1},
			{"schedstatd_host_pid_namespace", "", 1},
			{"schedstatd_task_source", source, 1},
			{"schedstatd_exit_capture_enabled", "", 1},
		} {
			if got := gaugeOf(mfs, g.name, g.label); got != g.want {
				t.Errorf("%s{%s} = %v, want %v", g.name, g.label, got, g.want)
			}
		}
		if got := labelOf(mfs, "schedstatd_build_info", "version"); got != testVersion {
			t.Errorf("schedstatd_build_info{version=%q}, want %q", got, testVersion)
		}
		log := daemonLog()
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, "starting schedstatd") {
				t.Logf("its log: %s", line)
			}
		}
		for _, want := range []string{startLine, "exit_capture=true", "container_runtime=true"} {
			if !strings.Contains(log, want) {
				t.Errorf("the start line lacks %s:\n%s", want, log)
			}
		}
		if ents, _ := os.ReadDir(filepath.Join(bpffs, "schedstatd")); source == "aggregate" && len(ents) == 0 {
			t.Errorf("no map pinned in the host's bpf filesystem (%s/schedstatd)", bpffs)
		}
		// Its own container, named as it names others'.
		l := seriesOf(mfs, "container_schedstat_tasks", daemon.CgroupID())
		if l["container"] != ctr.Name || l["pod"] != sandbox.Name || l["namespace"] != m.ds.Namespace || l["image"] != ctr.Image {
			t.Errorf("the daemon's own container labelled %v", l)
		}
	})

	t.Run("run vs usage", func(t *testing.T) {
		cg := containerdtest.CgroupDir("cpuacct", spin.CgroupID())
		type sample struct{ run, before, after float64 }
		take := func() sample {
			var s sample
			s.before = float64(testcg.Usage(t, cg)) / 1e9
			s.run = valueOf(scrape(), "container_cpu_schedstat_run_seconds_total", spin.CgroupID())
			s.after = float64(testcg.Usage(t, cg)) / 1e9
			return s
		}
		s0 := take()
		time.Sleep(3 * time.Second)
		s1 := take()
		run, lo, hi := s1.run-s0.run, s1.before-s0.after, s1.after-s0.before
		t.Logf("the busy container: run %.4fs in a window in which cpuacct.usage grew %.4f-%.4fs: run/usage %.4f-%.4f", run, lo, hi, run/hi, run/lo)
		if lo <= 0 || run > 1.02*hi || run < 0.98*lo {
			t.Errorf("run %.4fs, want within [0.98, 1.02] of the cgroup's %.4f-%.4fs", run, lo, hi)
		}
	})

	t.Run("liveness", func(t *testing.T) {
		if err := probe(ctr.LivenessProbe); err != nil {
			t.Errorf("liveness probe %s: %v", ctr.LivenessProbe.HTTPGet.Path, err)
		}
	})

	t.Run("stop", func(t *testing.T) {
		grace := *tmpl.Spec.TerminationGracePeriodSeconds
		ctx, cancel := callContext(time.Duration(grace+10) * time.Second)
		defer cancel()
		start := time.Now()
		if _, err := c.Runtime.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: daemon.ID, Timeout: grace}); err != nil {
			t.Fatal(err)
		}
		r, err := c.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: daemon.ID})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("stopped in %v, exit code %d, reason %q", time.Since(start).Round(time.Millisecond), r.GetStatus().GetExitCode(), r.GetStatus().GetReason())
		if code := r.GetStatus().GetExitCode(); code != 0 {
			t.Errorf("exit code %d on SIGTERM, want 0 (killed after the %ds grace period?)\n%s", code, grace, daemonLog())
		}
		statePath := daemonSetFlags(t, ctr)["state.path"]
		if _, err := os.Stat(filepath.Join(state, filepath.Base(statePath))); err != nil {
			t.Errorf("no state file on the host's side of the state volume: %v", err)
		}
	})
}
