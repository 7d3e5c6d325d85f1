package deploy

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/schedstatd/schedstatd/aggregate"
	"github.com/schedstatd/schedstatd/internal/testkit/yamlstrict"
)

// decodeStrict decodes the YAML file path into out, failing on a field out
// has no place for, and checks that nothing was lost or renamed on the
// way: encoding/json matches field names regardless of case, so a field
// spelt "hostPid" would otherwise pass as hostPID.
func decodeStrict(t *testing.T, path string, out any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yamlstrict.Decode(data, out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestStrictDecodingRejects is the control for the strict decoding (decodeStrict, yamlstrict.Decode): an unknown
// field, a field in the wrong case, a second document and a wrong type all
// fail.
func TestStrictDecodingRejects(t *testing.T) {
	data, err := os.ReadFile("daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	good := string(data)
	for name, bad := range map[string]string{
		"unknown field":   strings.Replace(good, "      hostPID: true\n", "      hostPID: true\n      hostPIDs: true\n", 1),
		"wrong case":      strings.Replace(good, "      hostPID: true\n", "      hostPid: true\n", 1),
		"second doc":      good + "---\n" + good,
		"wrong type":      strings.Replace(good, "      hostPID: true\n", "      hostPID: yes please\n", 1),
		"misplaced field": strings.Replace(good, "            readOnlyRootFilesystem: true\n", "            readOnlyRootFilesystem: true\n            readOnly: true\n", 1),
	} {
		if bad == good {
			t.Fatalf("%s: the edit did not apply", name)
		}
		var ds appsv1.DaemonSet
		if err := yamlstrict.Decode([]byte(bad), &ds); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
	var ds appsv1.DaemonSet
	if err := yamlstrict.Decode(data, &ds); err != nil {
		t.Errorf("the manifest itself: %v", err)
	}
}

// manifests are the decoded files.
type manifests struct {
	ns  corev1.Namespace
	ds  appsv1.DaemonSet
	svc corev1.Service
	pm  podMonitor
	kz  kustomization
	sc  scrapeFile
}

// podMonitor is the part of monitoring.coreos.com/v1 PodMonitor that
// podmonitor.yaml uses; a field outside it fails the strict decoding.
type podMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels,omitempty"`
	} `json:"metadata"`
	Spec struct {
		JobLabel string `json:"jobLabel,omitempty"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		PodMetricsEndpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path,omitempty"`
			Interval      string `json:"interval,omitempty"`
			ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
			HonorLabels   bool   `json:"honorLabels,omitempty"`
			Relabelings   []struct {
				SourceLabels []string `json:"sourceLabels,omitempty"`
				TargetLabel  string   `json:"targetLabel,omitempty"`
			} `json:"relabelings,omitempty"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// kustomization is the part of kustomize's Kustomization that
// kustomization.yaml uses.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name   string `json:"name"`
		NewTag string `json:"newTag,omitempty"`
	} `json:"images,omitempty"`
}

// scrapeFile is the part of a Prometheus configuration that
// scrape-config.yaml uses.
type scrapeFile struct {
	ScrapeConfigs []struct {
		JobName             string `json:"job_name"`
		ScrapeInterval      string `json:"scrape_interval"`
		ScrapeTimeout       string `json:"scrape_timeout"`
		MetricsPath         string `json:"metrics_path"`
		HonorLabels         bool   `json:"honor_labels"`
		KubernetesSDConfigs []struct {
			Role       string `json:"role"`
			Namespaces struct {
				Names []string `json:"names"`
			} `json:"namespaces"`
		} `json:"kubernetes_sd_configs"`
		RelabelConfigs []struct {
			SourceLabels []string `json:"source_labels,omitempty"`
			Regex        string   `json:"regex,omitempty"`
			Action       string   `json:"action,omitempty"`
			TargetLabel  string   `json:"target_label,omitempty"`
		} `json:"relabel_configs"`
	} `json:"scrape_configs"`
}

func load(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{}
	decodeStrict(t, "namespace.yaml", &m.ns)
	decodeStrict(t, "daemonset.yaml", &m.ds)
	decodeStrict(t, "service.yaml", &m.svc)
	decodeStrict(t, "podmonitor.yaml", &m.pm)
	decodeStrict(t, "kustomization.yaml", &m.kz)
	decodeStrict(t, "scrape-config.yaml", &m.sc)
	return m
}

func TestManifestKinds(t *testing.T) {
	m := load(t)
	for _, k := range []struct{ file, apiVersion, kind, gotAPI, gotKind string }{
		{"namespace.yaml", "v1", "Namespace", m.ns.APIVersion, m.ns.Kind},
		{"daemonset.yaml", "apps/v1", "DaemonSet", m.ds.APIVersion, m.ds.Kind},
		{"service.yaml", "v1", "Service", m.svc.APIVersion, m.svc.Kind},
		{"podmonitor.yaml", "monitoring.coreos.com/v1", "PodMonitor", m.pm.APIVersion, m.pm.Kind},
		{"kustomization.yaml", "kustomize.config.k8s.io/v1beta1", "Kustomization", m.kz.APIVersion, m.kz.Kind},
	} {
		if k.gotAPI != k.apiVersion || k.gotKind != k.kind {
			t.Errorf("%s: %s %s, want %s %s", k.file, k.gotAPI, k.gotKind, k.apiVersion, k.kind)
		}
	}
	for _, r := range m.kz.Resources {
		if _, err := os.Stat(r); err != nil {
			t.Errorf("kustomization.yaml: %v", err)
		}
	}
	for _, want := range []string{"namespace.yaml", "daemonset.yaml", "service.yaml"} {
		if !slices.Contains(m.kz.Resources, want) {
			t.Errorf("kustomization.yaml leaves out %s", want)
		}
	}
	image, _, _ := strings.Cut(m.ds.Spec.Template.Spec.Containers[0].Image, ":")
	for _, img := range m.kz.Images {
		if img.Name != image {
			t.Errorf("kustomization.yaml sets the tag of %s; the DaemonSet runs %s", img.Name, image)
		}
	}
}

// container returns the DaemonSet's one container.
func (m *manifests) container(t *testing.T) *corev1.Container {
	t.Helper()
	if n := len(m.ds.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("%d containers in the DaemonSet, want 1", n)
	}
	return &m.ds.Spec.Template.Spec.Containers[0]
}

func TestDaemonSetPrivileges(t *testing.T) {
	m := load(t)
	spec := m.ds.Spec.Template.Spec
	c := m.container(t)
	if !spec.HostPID {
		t.Error("hostPID is not set: cgroup files would leave out the threads of other pods")
	}
	if spec.HostNetwork || spec.HostIPC {
		t.Error("hostNetwork or hostIPC is set; neither is needed")
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("a service account token is mounted; the daemon never calls the API server")
	}
	sc := c.SecurityContext
	if sc == nil {
		t.Fatal("no container securityContext")
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Error("privileged")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem is not true")
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("capabilities dropped: %v, want ALL", sc.Capabilities)
	}
	// SYS_RESOURCE raises RLIMIT_NOFILE; BPF and PERFMON load the exit
	// capture program.
	if sc.Capabilities != nil && !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"SYS_RESOURCE", "BPF", "PERFMON"}) {
		t.Errorf("capabilities added: %v, want SYS_RESOURCE, BPF and PERFMON alone", sc.Capabilities.Add)
	}
	for _, vm := range c.VolumeMounts {
		// The state file's directory and the kernel totals' pins are
		// where the daemon writes.
		if !vm.ReadOnly && vm.Name != stateVolume && vm.Name != bpffsVolume {
			t.Errorf("volume %s is mounted read-write", vm.Name)
		}
	}
	for _, v := range spec.Volumes {
		if v.HostPath == nil {
			t.Errorf("volume %s is not a hostPath", v.Name)
		}
	}
	if enforce := m.ns.Labels["pod-security.kubernetes.io/enforce"]; enforce != "privileged" {
		t.Errorf("namespace enforces pod security %q; hostPID and hostPath need privileged", enforce)
	}
}

func TestDaemonSetResources(t *testing.T) {
	c := load(t).container(t)
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := c.Resources.Requests[r]
		lim, okLim := c.Resources.Limits[r]
		if !okReq || !okLim {
			t.Errorf("%s: request %v, limit %v; want both", r, req, lim)
			continue
		}
		if req.Cmp(lim) > 0 {
			t.Errorf("%s: request %s above limit %s", r, &req, &lim)
		}
	}
}

// TestObjectsAgree checks the names that tie the objects together: the
// namespace, selectors and labels, port names, and the job label.
func TestObjectsAgree(t *testing.T) {
	m := load(t)
	ns := m.ns.Name
	for what, got := range map[string]string{"DaemonSet": m.ds.Namespace, "Service": m.svc.Namespace, "PodMonitor": m.pm.Metadata.Namespace} {
		if got != ns {
			t.Errorf("%s in namespace %q, want %q", what, got, ns)
		}
	}
	podLabels := m.ds.Spec.Template.Labels
	matches := func(what string, selector map[string]string) {
		if len(selector) == 0 {
			t.Errorf("%s selects everything", what)
		}
		for k, v := range selector {
			if podLabels[k] != v {
				t.Errorf("%s selects %s=%s; the pods have %q", what, k, v, podLabels[k])
			}
		}
	}
	matches("DaemonSet", m.ds.Spec.Selector.MatchLabels)
	matches("Service", m.svc.Spec.Selector)
	matches("PodMonitor", m.pm.Spec.Selector.MatchLabels)

	c := m.container(t)
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for _, p := range m.svc.Spec.Ports {
		if _, ok := ports[p.TargetPort.String()]; !ok {
			t.Errorf("Service targets port %s; the container has %v", p.TargetPort.String(), ports)
		}
	}
	if len(m.pm.Spec.PodMetricsEndpoints) == 0 {
		t.Fatal("PodMonitor has no endpoint")
	}
	for _, e := range m.pm.Spec.PodMetricsEndpoints {
		if _, ok := ports[e.Port]; !ok {
			t.Errorf("PodMonitor scrapes port %s; the container has %v", e.Port, ports)
		}
		if !e.HonorLabels {
			t.Error("PodMonitor does not honor labels: the series' namespace, pod and container would become exported_*")
		}
	}
	for _, probe := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != "/healthz" {
			t.Errorf("probe %+v does not ask /healthz", probe)
			continue
		}
		if _, ok := ports[probe.HTTPGet.Port.String()]; !ok {
			t.Errorf("probe asks port %s; the container has %v", probe.HTTPGet.Port.String(), ports)
		}
	}
	flags := daemonSetFlags(t, c)
	_, port, _ := strings.Cut(flags["web.listen-address"], ":")
	if want := fmt.Sprint(ports["metrics"]); port != want {
		t.Errorf("--web.listen-address=%s, but the metrics port is %s", flags["web.listen-address"], want)
	}
	// The job label: the PodMonitor takes it from a pod label, the scrape
	// config names it, and the dashboard defaults to it.
	if job := podLabels[m.pm.Spec.JobLabel]; job != dashboardJob(t) {
		t.Errorf("PodMonitor's job is %q (label %s), the dashboard's %q", job, m.pm.Spec.JobLabel, dashboardJob(t))
	}
}

// daemonSetFlags returns the container's --name=value arguments by name.
func daemonSetFlags(t *testing.T, c *corev1.Container) map[string]string {
	t.Helper()
	if len(c.Command) != 0 {
		t.Errorf("the container overrides the image's entrypoint: %v", c.Command)
	}
	flags := map[string]string{}
	for _, a := range c.Args {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			t.Errorf("argument %q is not --name=value", a)
			continue
		}
		flags[name] = value
	}
	return flags
}

// mountFor returns the container's mount whose path holds path, and the
// volume's host path.
func mountFor(m *manifests, c *corev1.Container, path string) (mount corev1.VolumeMount, hostPath string, ok bool) {
	for _, vm := range c.VolumeMounts {
		if path != vm.MountPath && !strings.HasPrefix(path, vm.MountPath+"/") {
			continue
		}
		for _, v := range m.ds.Spec.Template.Spec.Volumes {
			if v.Name == vm.Name && v.HostPath != nil {
				return vm, v.HostPath.Path, true
			}
		}
	}
	return corev1.VolumeMount{}, "", false
}

// TestFlagsMatchMounts checks that the paths the flags name are where the
// host's /proc, /sys/fs/cgroup and the runtime's socket directory are
// mounted.
func TestFlagsMatchMounts(t *testing.T) {
	m := load(t)
	c := m.container(t)
	flags := daemonSetFlags(t, c)
	for flag, host := range map[string]string{"path.procfs": "/proc", "path.cgroupfs": "/sys/fs/cgroup"} {
		vm, hostPath, ok := mountFor(m, c, flags[flag])
		if !ok || vm.MountPath != flags[flag] || hostPath != host {
			t.Errorf("--%s=%s: mounted from %q at %q; want the host's %s there", flag, flags[flag], hostPath, vm.MountPath, host)
			continue
		}
		if !vm.ReadOnly {
			t.Errorf("%s is mounted read-write", vm.Name)
		}
		// Kubernetes before 1.30 rejects the field (the chart sets it on
		// 1.30 and later).
		if vm.RecursiveReadOnly != nil {
			t.Errorf("%s: recursiveReadOnly, which API servers before 1.30 reject", vm.Name)
		}
	}
	endpoint := flags["container-runtime-endpoint"]
	socket, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok {
		t.Fatalf("--container-runtime-endpoint=%q is not a unix socket", endpoint)
	}
	vm, hostPath, ok := mountFor(m, c, socket)
	if !ok {
		t.Fatalf("the runtime socket %s is on no mount", socket)
	}
	if socket[:strings.LastIndexByte(socket, '/')] != vm.MountPath {
		t.Errorf("mount %s at %s: mount the socket's directory, so a runtime restart's new socket is seen", vm.Name, vm.MountPath)
	}
	if hostPath != vm.MountPath {
		t.Errorf("the runtime's directory %s is mounted at %s; at the same path the daemon's default finds it too", hostPath, vm.MountPath)
	}
}

// stateVolume is the volume of the state file's directory.
const stateVolume = "state"

// TestStateMount checks that --state.path lies on the writable hostPath
// volume of the host's /run/schedstatd, at the same path, made if missing:
// a restarted pod finds the file its predecessor wrote, a reboot empties
// /run.
func TestStateMount(t *testing.T) {
	m := load(t)
	c := m.container(t)
	path := daemonSetFlags(t, c)["state.path"]
	if path == "" {
		t.Fatal("no --state.path: the counters would start over at every rollout")
	}
	vm, hostPath, ok := mountFor(m, c, path)
	if !ok || vm.Name != stateVolume || vm.ReadOnly {
		t.Fatalf("--state.path=%s is not on the writable volume %q: %+v", path, stateVolume, vm)
	}
	if dir := path[:strings.LastIndexByte(path, '/')]; dir != vm.MountPath || hostPath != vm.MountPath || !strings.HasPrefix(hostPath, "/run/") {
		t.Errorf("state directory %s mounted at %s from the host's %s; want the host's /run/... at the same path", dir, vm.MountPath, hostPath)
	}
	for _, v := range m.ds.Spec.Template.Spec.Volumes {
		if v.Name == stateVolume && (v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectoryOrCreate) {
			t.Errorf("volume %s: type %v, want DirectoryOrCreate", v.Name, v.HostPath.Type)
		}
	}
}

// bpffsVolume is the volume of the host's bpf filesystem.
const bpffsVolume = "bpffs"

// TestBPFFSMount checks that --bpf.pin-path (the daemon's default unless
// the DaemonSet names one) lies on the writable hostPath volume of the
// host's /sys/fs/bpf, at the same path, which must exist: where the host
// has a bpf filesystem there, auto takes the kernel totals and their pins
// outlive the pod.
func TestBPFFSMount(t *testing.T) {
	m := load(t)
	c := m.container(t)
	path, set := daemonSetFlags(t, c)["bpf.pin-path"]
	if !set {
		path = aggregate.BPFFSRoot + "/schedstatd"
	}
	vm, hostPath, ok := mountFor(m, c, path)
	if !ok || vm.Name != bpffsVolume || vm.ReadOnly {
		t.Fatalf("--bpf.pin-path=%s is not on the writable volume %q: %+v", path, bpffsVolume, vm)
	}
	if hostPath != aggregate.BPFFSRoot || vm.MountPath != aggregate.BPFFSRoot {
		t.Errorf("%s mounted at %s from the host's %s; want the host's %s at the same path", bpffsVolume, vm.MountPath, hostPath, aggregate.BPFFSRoot)
	}
	for _, v := range m.ds.Spec.Template.Spec.Volumes {
		if v.Name == bpffsVolume && (v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectory) {
			t.Errorf("volume %s: type %v, want Directory (the kernel makes it; made by the kubelet it would be no bpf filesystem)", v.Name, v.HostPath.Type)
		}
	}
}

// TestScrapeConfig checks the plain Prometheus job against the DaemonSet:
// its keep rules match the pods' label and port, as Prometheus anchors
// regexes, and it honors the series' labels.
func TestScrapeConfig(t *testing.T) {
	m := load(t)
	if n := len(m.sc.ScrapeConfigs); n != 1 {
		t.Fatalf("%d scrape configs, want 1", n)
	}
	job := m.sc.ScrapeConfigs[0]
	if job.JobName != dashboardJob(t) {
		t.Errorf("job %q; the dashboard's default is %q", job.JobName, dashboardJob(t))
	}
	if !job.HonorLabels {
		t.Error("honor_labels is not set")
	}
	if len(job.KubernetesSDConfigs) != 1 || job.KubernetesSDConfigs[0].Role != "pod" ||
		!slices.Contains(job.KubernetesSDConfigs[0].Namespaces.Names, m.ds.Namespace) {
		t.Errorf("kubernetes_sd_configs %+v: want role pod in namespace %s", job.KubernetesSDConfigs, m.ds.Namespace)
	}
	meta := map[string]string{"__meta_kubernetes_pod_container_port_name": "metrics"}
	for k, v := range m.ds.Spec.Template.Labels {
		meta["__meta_kubernetes_pod_label_"+regexp.MustCompile(`[^a-zA-Z0-9_]`).ReplaceAllString(k, "_")] = v
	}
	keeps := 0
	for _, r := range job.RelabelConfigs {
		if r.Action != "keep" {
			continue
		}
		keeps++
		if len(r.SourceLabels) != 1 {
			t.Errorf("keep on %v: want one source label", r.SourceLabels)
			continue
		}
		value, ok := meta[r.SourceLabels[0]]
		if !ok {
			t.Errorf("keep on %s: no such label on the pods' targets", r.SourceLabels[0])
		} else if !regexp.MustCompile("^(?:" + r.Regex + ")$").MatchString(value) {
			t.Errorf("keep on %s=~%q drops the pods, whose value is %q", r.SourceLabels[0], r.Regex, value)
		}
	}
	if keeps == 0 {
		t.Error("no keep rule: every pod of the namespace would be scraped")
	}
}

func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var from []string
	var user, entrypoint string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "FROM":
			from = append(from, f[len(f)-1])
			if f[len(f)-2] == "AS" {
				from[len(from)-1] = f[len(f)-3]
			}
		case "USER":
			user = f[1]
		case "ENTRYPOINT":
			entrypoint = strings.Join(f[1:], " ")
		}
	}
	if len(from) < 2 {
		t.Fatalf("FROM lines %v: want a build stage and a final one", from)
	}
	final := from[len(from)-1]
	if final != "scratch" {
		t.Errorf("final base %s is not scratch, the empty base make image builds on", final)
	}
	if user == "" || strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
		t.Errorf("USER %q: the image should not default to root", user)
	}
	if entrypoint != `["/schedstatd"]` {
		t.Errorf("ENTRYPOINT %s", entrypoint)
	}
	for _, want := range []string{"CGO_ENABLED=0", "./cmd/schedstatd", "COPY --from=build /out/schedstatd /schedstatd"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	// The Go version of the build stage is the module's.
	goMod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(goMod)
	argLine := regexp.MustCompile(`(?m)^ARG GO_VERSION=(\S+)`).FindSubmatch(data)
	if goLine == nil || argLine == nil || string(goLine[1]) != string(argLine[1]) {
		t.Errorf("Dockerfile GO_VERSION %q, go.mod go %q", argLine, goLine)
	}
}
