package deploy

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/internal/imagebuild"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

func testNode(t *testing.T) criNode {
	return criNode{
		hostPaths:    map[string]string{"/run/containerd": t.TempDir(), "/run/schedstatd": t.TempDir()},
		memoryBytes:  16 << 30,
		cgroupParent: func(qos, uid string) string { return "/kubepods/" + qos + "/pod" + uid },
		logDir:       "/var/log/pods",
	}
}

// TestPodToCRI checks the translation of the DaemonSet against what
// kubelet computes for it: namespaces, the QoS class, CPU shares and
// quota, the OOM score, the security context and the mounts.
func TestPodToCRI(t *testing.T) {
	m := load(t)
	node := testNode(t)
	p, err := podToCRI(m.ds.Spec.Template, "schedstatd-abcde", "schedstatd", "uid-1", node)
	if err != nil {
		t.Fatal(err)
	}
	if p.qos != "burstable" || p.sandbox.Linux.CgroupParent != "/kubepods/burstable/poduid-1" {
		t.Errorf("qos %q, cgroup parent %q", p.qos, p.sandbox.Linux.CgroupParent)
	}
	ns := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_POD}
	if d := cmp.Diff(ns.String(), p.sandbox.Linux.SecurityContext.NamespaceOptions.String()); d != "" {
		t.Errorf("namespaces (-want +got):\n%s", d)
	}
	c := p.containers[0]
	// 16 GiB, a 96 MiB request: 1000 - 1000*96Mi/16Gi = 995 (integer).
	r := c.Linux.Resources
	if r.CpuShares != 51 || r.CpuQuota != 100000 || r.CpuPeriod != 100000 || r.MemoryLimitInBytes != 256<<20 || r.OomScoreAdj != 995 {
		t.Errorf("resources %v", r)
	}
	sc := c.Linux.SecurityContext
	if !sc.ReadonlyRootfs || !sc.NoNewPrivs || sc.Privileged || sc.RunAsUser.GetValue() != 0 || sc.RunAsUser == nil ||
		sc.Seccomp.GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault ||
		!slices.Equal(sc.Capabilities.DropCapabilities, []string{"ALL"}) || !slices.Equal(sc.Capabilities.AddCapabilities, []string{"SYS_RESOURCE", "BPF", "PERFMON"}) {
		t.Errorf("security context %v", sc)
	}
	mounts := map[string]string{}
	for _, mt := range c.Mounts {
		ro := "rw"
		if mt.Readonly {
			ro = "ro"
		}
		mounts[mt.ContainerPath] = mt.HostPath + " " + ro
	}
	want := map[string]string{
		"/host/proc": "/proc ro", "/host/sys/fs/cgroup": "/sys/fs/cgroup ro",
		"/run/containerd": node.hostPaths["/run/containerd"] + " ro", "/run/schedstatd": node.hostPaths["/run/schedstatd"] + " rw",
		"/sys/fs/bpf": "/sys/fs/bpf rw",
	}
	if d := cmp.Diff(want, mounts); d != "" {
		t.Errorf("mounts (-want +got):\n%s", d)
	}
	if c.Labels[labelContainerName] != "schedstatd" || p.sandbox.Labels["app.kubernetes.io/name"] != "schedstatd" {
		t.Errorf("labels: sandbox %v, container %v", p.sandbox.Labels, c.Labels)
	}
}

// TestPodToCRIRejects is the control: a field the translation does not
// take fails it, rather than being ignored.
func TestPodToCRIRejects(t *testing.T) {
	for name, edit := range map[string]func(*corev1.PodSpec){
		"env": func(s *corev1.PodSpec) { s.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}} },
		"configMap volume": func(s *corev1.PodSpec) {
			s.Volumes[0].HostPath, s.Volumes[0].ConfigMap = nil, &corev1.ConfigMapVolumeSource{}
		},
		"fsGroup":        func(s *corev1.PodSpec) { s.SecurityContext.FSGroup = ptr.To[int64](1) },
		"init container": func(s *corev1.PodSpec) { s.InitContainers = []corev1.Container{{Name: "i"}} },
		"token":          func(s *corev1.PodSpec) { s.AutomountServiceAccountToken = nil },
		"sysctls":        func(s *corev1.PodSpec) { s.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "a", Value: "b"}} },
		"procMount":      func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.ProcMount = ptr.To(corev1.UnmaskedProcMount) },
		"hugepages":      func(s *corev1.PodSpec) { s.Containers[0].Resources.Limits["hugepages-2Mi"] = resource.MustParse("2Mi") },
		"recursiveReadOnly": func(s *corev1.PodSpec) {
			s.Containers[0].VolumeMounts[0].RecursiveReadOnly = ptr.To(corev1.RecursiveReadOnlyIfPossible)
		},
		"$(VAR) in args":     func(s *corev1.PodSpec) { s.Containers[0].Args = append(s.Containers[0].Args, "--x=$(NODE)") },
		"runAsNonRoot uid 0": func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.RunAsNonRoot = ptr.To(true) },
	} {
		tmpl := *load(t).ds.Spec.Template.DeepCopy()
		edit(&tmpl.Spec)
		_, err := podToCRI(tmpl, "n", "ns", "u", testNode(t))
		if err == nil {
			t.Errorf("%s: translated without an error", name)
		} else if name != "runAsNonRoot uid 0" && !errors.Is(err, errUnhandled) {
			t.Errorf("%s: %v, want errUnhandled", name, err)
		}
	}
}

// TestDockerfileBuildsTheImage checks that deploy/Dockerfile makes the
// image make image makes: on an empty base, the same entrypoint, user,
// port and label names.
func TestDockerfileBuildsTheImage(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	data := string(b)
	finals := regexp.MustCompile(`(?m)^FROM (\S+)\s*$`).FindAllStringSubmatch(data, -1)
	if len(finals) != 1 || finals[0][1] != "scratch" {
		t.Errorf("final stage FROM %v, want scratch (the empty base)", finals)
	}
	for _, want := range []string{
		`ENTRYPOINT ["` + imagebuild.Binary + `"]`,
		"USER " + imagebuild.User,
		"EXPOSE " + strings.TrimSuffix(imagebuild.Port, "/tcp"),
		"COPY --from=build /out/schedstatd " + imagebuild.Binary,
		"go build -trimpath",
	} {
		if !strings.Contains(data, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	for k := range imagebuild.Labels("v", "r", time.Unix(0, 0)) {
		if k == "org.opencontainers.image.created" {
			continue // the build's time, which the Dockerfile cannot know
		}
		if !strings.Contains(data, k+"=") {
			t.Errorf("Dockerfile lacks the label %s", k)
		}
	}
}
