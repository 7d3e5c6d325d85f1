package chart

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// Kubernetes versions: the last before recursiveReadOnly, and the first
// with it.
const (
	kube129 = "v1.29.0"
	kube130 = "v1.30.0"
)

// helmLabels are the labels the chart adds to its objects' metadata (not
// to the pods or selectors) that deploy/'s objects do not carry.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"}

// nonDefault are values that change every setting the chart offers. Helm
// merges maps with the defaults: null removes a default's key (the CPU
// limit, the os node selector).
const nonDefault = `
image: {repository: registry.example.com/mirror/schedstatd, tag: v9.9.9, pullPolicy: Always}
imagePullSecrets: [{name: regcred}]
runtime: {type: crio}
port: 9999
collectInterval: 5s
extraArgs: [--log.level=debug]
state: {enabled: true, hostPath: /var/run/schedstatd-state}
recursiveReadOnly: ""
resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: null, memory: 512Mi}}
tolerations: [{key: dedicated, operator: Equal, value: infra, effect: NoSchedule}]
nodeSelector: {kubernetes.io/os: null, node-role.kubernetes.io/worker: "true"}
priorityClassName: system-node-critical
podLabels: {team: sre}
podAnnotations: {example.com/scraped: "yes"}
terminationGracePeriodSeconds: 30
podMonitor: {enabled: true, labels: {release: prom, team: sre}, interval: 30s, scrapeTimeout: 20s}
serviceMonitor: {enabled: true, labels: {release: prom}}
prometheusRule: {enabled: true, labels: {release: prom, role: alert-rules}}
dashboard: {enabled: true, namespace: monitoring, labels: {grafana_dashboard: "1", extra: x}, annotations: {grafana_folder: Kubernetes}}
`

// TestLint runs helm lint with the default values and the others, for
// both Kubernetes versions: no error and no warning.
func TestLint(t *testing.T) {
	for _, vals := range []string{"", nonDefault} {
		values := map[string]any{}
		if err := yaml.Unmarshal([]byte(vals), &values); err != nil {
			t.Fatal(err)
		}
		for _, kv := range []string{kube129, kube130} {
			v, err := chartutil.ParseKubeVersion(kv)
			if err != nil {
				t.Fatal(err)
			}
			l := lint.AllWithKubeVersion(chartDir, values, releaseNamespace, v)
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint (Kubernetes %s, values %q): %v", kv, vals, m)
				} else {
					t.Logf("helm lint: %v", m)
				}
			}
		}
	}
}

// TestDefaultsAreDeploy: with the default values, for the deploy/ names,
// the DaemonSet and the Service are deploy/'s, the one the image test
// runs, but for the chart's bookkeeping labels; on Kubernetes 1.30 and
// later, with recursiveReadOnly on the host's /proc and cgroupfs.
func TestDefaultsAreDeploy(t *testing.T) {
	var want appsv1.DaemonSet
	decodeFile(t, "daemonset.yaml", &want)
	var wantSvc corev1.Service
	decodeFile(t, "service.yaml", &wantSvc)
	ignore := cmpopts.IgnoreMapEntries(func(k, _ string) bool { return slices.Contains(helmLabels, k) })
	for _, kv := range []string{kube129, kube130} {
		docs := mustRender(t, "", kv)
		var got appsv1.DaemonSet
		decodeInto(t, docs, "DaemonSet/schedstatd", &got)
		for _, l := range helmLabels {
			if got.Labels[l] == "" {
				t.Errorf("the DaemonSet lacks the label %s", l)
			}
		}
		want := want.DeepCopy()
		if kv == kube130 {
			for i, m := range want.Spec.Template.Spec.Containers[0].VolumeMounts {
				if m.Name == "proc" || m.Name == "cgroup" {
					rro := corev1.RecursiveReadOnlyIfPossible
					want.Spec.Template.Spec.Containers[0].VolumeMounts[i].RecursiveReadOnly = &rro
				}
			}
		}
		if d := cmp.Diff(want, &got, ignore); d != "" {
			t.Errorf("Kubernetes %s: the rendered DaemonSet is not deploy/daemonset.yaml (-deploy +chart):\n%s", kv, d)
		}
		var svc corev1.Service
		decodeInto(t, docs, "Service/schedstatd", &svc)
		if d := cmp.Diff(&wantSvc, &svc, ignore); d != "" {
			t.Errorf("the rendered Service is not deploy/service.yaml (-deploy +chart):\n%s", d)
		}
		if len(docs) != 2 {
			t.Errorf("%d objects rendered by default, want the DaemonSet and the Service", len(docs))
		}
	}
}

// daemonSet renders vals and returns the DaemonSet and its container.
func daemonSet(t *testing.T, vals string) (*appsv1.DaemonSet, *corev1.Container) {
	t.Helper()
	var ds appsv1.DaemonSet
	decodeInto(t, mustRender(t, vals, kube130), "DaemonSet/schedstatd", &ds)
	if n := len(ds.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("%d containers", n)
	}
	return &ds, &ds.Spec.Template.Spec.Containers[0]
}

// flag returns the value of --name= among args, and whether it is there.
func flag(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// TestRuntimes checks each runtime type: the endpoint flag, and the
// socket directory mounted read-only at its own path, made if missing;
// none mounts nothing and asks no runtime.
func TestRuntimes(t *testing.T) {
	for _, tc := range []struct{ vals, endpoint, dir string }{
		{"", "unix:///run/containerd/containerd.sock", "/run/containerd"},
		{"runtime: {type: containerd}", "unix:///run/containerd/containerd.sock", "/run/containerd"},
		{"runtime: {type: crio}", "unix:///run/crio/crio.sock", "/run/crio"},
		{"runtime: {type: k3s}", "unix:///run/k3s/containerd/containerd.sock", "/run/k3s/containerd"},
		{"runtime: {type: rke2}", "unix:///run/k3s/containerd/containerd.sock", "/run/k3s/containerd"},
		{"runtime: {type: crio, socketDir: /var/run/crio, socket: crio.socket}", "unix:///var/run/crio/crio.socket", "/var/run/crio"},
		{"runtime: {type: none}", "none", ""},
	} {
		ds, c := daemonSet(t, tc.vals)
		if got, _ := flag(c.Args, "container-runtime-endpoint"); got != tc.endpoint {
			t.Errorf("%s: --container-runtime-endpoint=%s, want %s", tc.vals, got, tc.endpoint)
		}
		var mount *corev1.VolumeMount
		for i := range c.VolumeMounts {
			if c.VolumeMounts[i].Name == "runtime" {
				mount = &c.VolumeMounts[i]
			}
		}
		var vol *corev1.Volume
		for i := range ds.Spec.Template.Spec.Volumes {
			if ds.Spec.Template.Spec.Volumes[i].Name == "runtime" {
				vol = &ds.Spec.Template.Spec.Volumes[i]
			}
		}
		if tc.dir == "" {
			if mount != nil || vol != nil {
				t.Errorf("%s: a runtime volume %+v mounted %+v", tc.vals, vol, mount)
			}
			continue
		}
		if mount == nil || vol == nil || vol.HostPath == nil {
			t.Fatalf("%s: no runtime volume or mount", tc.vals)
		}
		if mount.MountPath != tc.dir || vol.HostPath.Path != tc.dir || !mount.ReadOnly {
			t.Errorf("%s: host %s mounted at %s (read-only %v), want %s at the same path, read-only", tc.vals, vol.HostPath.Path, mount.MountPath, mount.ReadOnly, tc.dir)
		}
		if vol.HostPath.Type == nil || *vol.HostPath.Type != corev1.HostPathDirectoryOrCreate {
			t.Errorf("%s: the runtime volume's type is %v: a node without the directory would hold the pod in ContainerCreating", tc.vals, vol.HostPath.Type)
		}
	}
	if _, err := render(t, "runtime: {type: docker}", kube130); err == nil || !strings.Contains(err.Error(), "runtime.type") {
		t.Errorf("an unknown runtime type rendered: %v", err)
	}
}

// TestNonDefaultValues renders values that change each setting and finds
// each in the DaemonSet.
func TestNonDefaultValues(t *testing.T) {
	ds, c := daemonSet(t, nonDefault)
	spec := ds.Spec.Template.Spec
	if c.Image != "registry.example.com/mirror/schedstatd:v9.9.9" || c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image %s, pull policy %s", c.Image, c.ImagePullPolicy)
	}
	if d := cmp.Diff([]corev1.LocalObjectReference{{Name: "regcred"}}, spec.ImagePullSecrets); d != "" {
		t.Errorf("image pull secrets (-want +got):\n%s", d)
	}
	for name, want := range map[string]string{"web.listen-address": ":9999", "collect.interval": "5s", "state.path": "/var/run/schedstatd-state/state", "log.level": "debug"} {
		if got, _ := flag(c.Args, name); got != want {
			t.Errorf("--%s=%s, want %s", name, got, want)
		}
	}
	if c.Ports[0].ContainerPort != 9999 {
		t.Errorf("container port %d", c.Ports[0].ContainerPort)
	}
	wantRes := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
	if d := cmp.Diff(wantRes, c.Resources); d != "" {
		t.Errorf("resources (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "infra", Effect: corev1.TaintEffectNoSchedule}}, spec.Tolerations); d != "" {
		t.Errorf("tolerations (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"node-role.kubernetes.io/worker": "true"}, spec.NodeSelector); d != "" {
		t.Errorf("node selector (-want +got):\n%s", d)
	}
	if spec.PriorityClassName != "system-node-critical" || *spec.TerminationGracePeriodSeconds != 30 {
		t.Errorf("priority class %q, grace period %d", spec.PriorityClassName, *spec.TerminationGracePeriodSeconds)
	}
	if ds.Spec.Template.Labels["team"] != "sre" || ds.Spec.Template.Annotations["example.com/scraped"] != "yes" {
		t.Errorf("pod labels %v, annotations %v", ds.Spec.Template.Labels, ds.Spec.Template.Annotations)
	}
	for _, m := range c.VolumeMounts {
		if m.RecursiveReadOnly != nil {
			t.Errorf("recursiveReadOnly \"\" still sets it on %s", m.Name)
		}
		if m.Name == "state" && m.MountPath != "/var/run/schedstatd-state" {
			t.Errorf("state mounted at %s", m.MountPath)
		}
		if m.Name == "runtime" && m.MountPath != "/run/crio" {
			t.Errorf("runtime mounted at %s", m.MountPath)
		}
	}
	for _, v := range spec.Volumes {
		if v.Name == "state" && (v.HostPath.Path != "/var/run/schedstatd-state" || *v.HostPath.Type != corev1.HostPathDirectoryOrCreate) {
			t.Errorf("state volume %+v", v.HostPath)
		}
	}

	// Without the host's bpf filesystem, no mount or volume of it.
	ds, c = daemonSet(t, "bpffs: {enabled: false}")
	for _, m := range c.VolumeMounts {
		if m.Name == "bpffs" || m.MountPath == "/sys/fs/bpf" {
			t.Errorf("mount %s with bpffs disabled", m.Name)
		}
	}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.Name == "bpffs" {
			t.Error("a bpffs volume with bpffs disabled")
		}
	}

	// Without state, no flag, mount or volume.
	_, c = daemonSet(t, "state: {enabled: false}")
	if _, ok := flag(c.Args, "state.path"); ok {
		t.Error("--state.path with state disabled")
	}
	for _, m := range c.VolumeMounts {
		if m.Name == "state" {
			t.Error("a state mount with state disabled")
		}
	}
}

// TestMonitors checks the PodMonitor and ServiceMonitor: off by default,
// the release label kube-prometheus-stack selects by default, the labels
// given otherwise, selectors that match the pods (and the Service), the
// job label the dashboard expects.
func TestMonitors(t *testing.T) {
	for _, tc := range []struct {
		vals   string
		labels map[string]string
	}{
		{"podMonitor: {enabled: true}\nserviceMonitor: {enabled: true}", map[string]string{"release": "kube-prometheus-stack"}},
		{nonDefault, map[string]string{"release": "prom"}},
	} {
		docs := mustRender(t, tc.vals, kube130)
		var ds appsv1.DaemonSet
		decodeInto(t, docs, "DaemonSet/schedstatd", &ds)
		var svc corev1.Service
		decodeInto(t, docs, "Service/schedstatd", &svc)
		var pm podMonitor
		decodeInto(t, docs, "PodMonitor/schedstatd", &pm)
		var sm serviceMonitor
		decodeInto(t, docs, "ServiceMonitor/schedstatd", &sm)
		for k, v := range tc.labels {
			if pm.Labels[k] != v || sm.Labels[k] != v {
				t.Errorf("%q: PodMonitor labels %v, ServiceMonitor labels %v, want %s=%s", tc.vals, pm.Labels, sm.Labels, k, v)
			}
		}
		for k, v := range pm.Spec.Selector.MatchLabels {
			if ds.Spec.Template.Labels[k] != v {
				t.Errorf("the PodMonitor selects %s=%s; the pods have %q", k, v, ds.Spec.Template.Labels[k])
			}
		}
		for k, v := range sm.Spec.Selector.MatchLabels {
			if svc.Labels[k] != v {
				t.Errorf("the ServiceMonitor selects %s=%s; the Service has %q", k, v, svc.Labels[k])
			}
		}
		if job := ds.Spec.Template.Labels[pm.Spec.JobLabel]; job != "schedstatd" {
			t.Errorf("the PodMonitor's job is %q", job)
		}
		if len(pm.Spec.PodMetricsEndpoints) != 1 || !pm.Spec.PodMetricsEndpoints[0].HonorLabels || pm.Spec.PodMetricsEndpoints[0].Port != "metrics" {
			t.Errorf("PodMonitor endpoints %+v", pm.Spec.PodMetricsEndpoints)
		}
		if len(sm.Spec.Endpoints) != 1 || !sm.Spec.Endpoints[0].HonorLabels || sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name {
			t.Errorf("ServiceMonitor endpoints %+v", sm.Spec.Endpoints)
		}
	}
	// The PodMonitor of deploy/ is the chart's by default.
	var want podMonitor
	decodeFile(t, "podmonitor.yaml", &want)
	var got podMonitor
	decodeInto(t, mustRender(t, "podMonitor: {enabled: true}", kube130), "PodMonitor/schedstatd", &got)
	ignore := cmpopts.IgnoreMapEntries(func(k, _ string) bool { return slices.Contains(helmLabels, k) })
	if d := cmp.Diff(want, got, ignore); d != "" {
		t.Errorf("the rendered PodMonitor is not deploy/podmonitor.yaml (-deploy +chart):\n%s", d)
	}
}

// TestPrometheusRule: the groups of deploy/alerts.yaml, whatever they
// hold, with the labels given.
func TestPrometheusRule(t *testing.T) {
	var want ruleGroups
	decodeFile(t, "alerts.yaml", &want)
	if len(want.Groups) == 0 {
		t.Fatal("deploy/alerts.yaml has no groups")
	}
	for vals, labels := range map[string]map[string]string{
		"prometheusRule: {enabled: true}": {"release": "kube-prometheus-stack"},
		nonDefault:                        {"release": "prom", "role": "alert-rules"},
	} {
		var got prometheusRule
		decodeInto(t, mustRender(t, vals, kube130), "PrometheusRule/schedstatd", &got)
		if d := cmp.Diff(want, got.Spec); d != "" {
			t.Errorf("the PrometheusRule's groups are not deploy/alerts.yaml's (-alerts.yaml +chart):\n%s", d)
		}
		for k, v := range labels {
			if got.Labels[k] != v {
				t.Errorf("PrometheusRule labels %v, want %s=%s", got.Labels, k, v)
			}
		}
	}
}

// TestDashboard: the ConfigMap holds deploy/grafana-dashboard.json byte
// for byte, with the sidecar's label, in the namespace given.
func TestDashboard(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(deployDir, "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	for vals, ns := range map[string]string{"dashboard: {enabled: true}": releaseNamespace, nonDefault: "monitoring"} {
		var cm corev1.ConfigMap
		decodeInto(t, mustRender(t, vals, kube130), "ConfigMap/schedstatd-dashboard", &cm)
		if got := cm.Data["schedstatd.json"]; got != strings.TrimRight(string(want), "\n") {
			t.Errorf("the dashboard ConfigMap holds %d bytes, not deploy/grafana-dashboard.json's %d", len(got), len(want))
		}
		if cm.Labels["grafana_dashboard"] != "1" || cm.Namespace != ns {
			t.Errorf("%q: labels %v, namespace %s", vals, cm.Labels, cm.Namespace)
		}
	}
}

// TestVersions: the chart's appVersion is the tag deploy/ runs and sets.
func TestVersions(t *testing.T) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	decodeFile(t, "daemonset.yaml", &ds)
	image := ds.Spec.Template.Spec.Containers[0].Image
	if want := "ghcr.io/schedstatd/schedstatd:" + chrt.Metadata.AppVersion; image != want {
		t.Errorf("deploy/daemonset.yaml runs %s; the chart's appVersion makes %s", image, want)
	}
	kz, err := os.ReadFile(filepath.Join(deployDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kz), "newTag: "+chrt.Metadata.AppVersion+"\n") {
		t.Errorf("deploy/kustomization.yaml does not set the tag %s", chrt.Metadata.AppVersion)
	}
}

// TestPackage runs helm package: the archive holds the linked files'
// contents (deploy/alerts.yaml and the dashboard), and loads.
func TestPackage(t *testing.T) {
	pkg := action.NewPackage()
	pkg.Destination = t.TempDir()
	path, err := pkg.Run(chartDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	chrt, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "schedstatd-" + chrt.Metadata.Version + ".tgz"; filepath.Base(path) != want {
		t.Errorf("packaged as %s, want %s", filepath.Base(path), want)
	}
	for _, name := range []string{"alerts.yaml", "grafana-dashboard.json"} {
		want, err := os.ReadFile(filepath.Join(deployDir, name))
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		for _, f := range chrt.Files {
			if f.Name == "files/"+name {
				got = f.Data
			}
		}
		if string(got) != string(want) {
			t.Errorf("the package's files/%s: %d bytes, not deploy/%s's %d", name, len(got), name, len(want))
		}
	}
}
