package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/schedstatd/schedstatd/internal/testkit/containerdtest"
)

// kubePod is a pod run by a real containerd as kubelet runs it with the
// cgroupfs driver, with one container, and what the test expects of it.
type kubePod struct {
	*containerdtest.Pod
	container *containerdtest.Container
	// want is the image label of the container's image.
	want string
	// spinners is how many processes spin in the container.
	spinners int
}

// podLabel and containerLabel are the names top gives the pod's and the
// container's rows.
func (p *kubePod) podLabel() string       { return p.Namespace + "/" + p.Name }
func (p *kubePod) containerLabel() string { return p.podLabel() + "/" + p.container.Name }

// spinners returns a container command that keeps n processes spinning.
func spinners(n int) []string {
	return []string{"/bin/sh", "-c", fmt.Sprintf("for i in $(seq %d); do (while :; do :; done) & done; wait", n)}
}

// seriesLabels returns the labels of the series of family name whose id
// label is id, or nil when there is none.
func seriesLabels(mfs map[string]*dto.MetricFamily, name, id string) map[string]string {
	for _, m := range mfs[name].GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["id"] == id {
			return l
		}
	}
	return nil
}

// gauge returns the value of the family name's one series, or -1 when it
// has not exactly one.
func gauge(mfs map[string]*dto.MetricFamily, name string) float64 {
	ms := mfs[name].GetMetric()
	if len(ms) != 1 {
		return -1
	}
	return ms[0].GetGauge().GetValue()
}

// cgroupFamilies are the families with one series per cgroup.
var cgroupFamilies = []string{
	"container_cpu_schedstat_run_seconds_total",
	"container_cpu_schedstat_runqueue_seconds_total",
	"container_cpu_schedstat_run_periods_total",
	"container_cpu_schedstat_usage_seconds_total",
	"container_schedstat_tasks",
}

// tableRows returns the first field of each row of a top table, below the
// column header whose first field is title.
func tableRows(t *testing.T, out, title string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	i := rowIndex(lines, title)
	if i < 0 {
		t.Fatalf("no %s column in:\n%s", title, out)
	}
	if !strings.Contains(lines[i], "WAIT/s*") {
		t.Errorf("the table is not marked as sorted by wait:\n%s", out)
	}
	var rows []string
	for _, l := range lines[i+1:] {
		if f := strings.Fields(l); len(f) > 0 {
			rows = append(rows, f[0])
		}
	}
	return rows
}

// topJSON is what `top --output=json` prints, in the parts checked here.
type topJSON struct {
	View string   `json:"view"`
	Rows []topRow `json:"rows"`
}

// topRow is a row of topJSON.
type topRow struct {
	Name      string   `json:"name"`
	IDs       []string `json:"ids"`
	Container string   `json:"container"`
	Pod       string   `json:"pod"`
	Namespace string   `json:"namespace"`
	Wait      *float64 `json:"runqueue_seconds_per_second"`
	Run       *float64 `json:"run_seconds_per_second"`
	Tasks     float64  `json:"tasks"`
}

// Images of the pods of TestKubePodsNamedEndToEnd, named as their pod
// specs would name them (each entrypoint differs, so each id does).
var (
	reportImage = containerdtest.Image{Name: "registry.example.com/batch/report:2.1", Entrypoint: []string{containerdtest.Busybox, "sh", "-e"}}
	nginxImage  = containerdtest.Image{Name: "docker.io/library/nginx:1.27", Entrypoint: []string{containerdtest.Busybox, "sh", "-u"}}
)

// TestKubePodsNamedEndToEnd runs the Kubernetes path on this machine: a
// real containerd (with runc and the cgroupfs driver) runs two pods made
// through its CRI as kubelet makes them, one burstable with six spinning
// processes in its container (more than the 2 cores: starved), one
// guaranteed with one; the daemon pointed at containerd's socket; then
// its /metrics and `top` by pod and by container, as a table and as JSON.
func TestKubePodsNamedEndToEnd(t *testing.T) {
	c := containerdtest.Start(t, reportImage, nginxImage)
	// The id labels of the test's cgroups start with base, the pods'
	// cgroup root, which is the test's own.
	base := c.CgroupRoot
	batch := &kubePod{Pod: c.RunPod("report-28190415-x7k2p", "batch", containerdtest.Burstable), want: reportImage.Name, spinners: 6}
	batch.container = c.StartContainer(batch.Pod, "crunch", reportImage.Name, spinners(batch.spinners)...)
	// A pod spec names the image "nginx:1.27"; it is labelled by its
	// full name.
	shop := &kubePod{Pod: c.RunPod("web-0", "shop", containerdtest.Guaranteed), want: nginxImage.Name, spinners: 1}
	shop.container = c.StartContainer(shop.Pod, "web", "nginx:1.27", spinners(shop.spinners)...)
	pods := []*kubePod{batch, shop}

	d := startBinary(t, plainBinary(t), nil, "--collect.interval=200ms", "--container-runtime-endpoint=unix://"+c.Socket)
	url := "http://" + d.addr + "/metrics"

	// Wait until the daemon has the runtime's names: its first refresh
	// runs at start, its first pass may come before.
	client := &http.Client{Timeout: 10 * time.Second}
	var mfs map[string]*dto.MetricFamily
	named := func() bool {
		for _, p := range pods {
			if seriesLabels(mfs, "container_schedstat_tasks", p.container.CgroupID())["container"] != p.container.Name {
				return false
			}
		}
		return gauge(mfs, "schedstatd_runtime_up") == 1
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		mfs = scrape(t, client, url)
		if named() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("within 20s, schedstatd_runtime_up is %v and the containers are labelled %v and %v",
				gauge(mfs, "schedstatd_runtime_up"),
				seriesLabels(mfs, "container_schedstat_tasks", batch.container.CgroupID()),
				seriesLabels(mfs, "container_schedstat_tasks", shop.container.CgroupID()))
		}
	}

	t.Run("metrics", func(t *testing.T) {
		if n := gauge(mfs, "schedstatd_runtime_containers"); n != 2 {
			t.Errorf("schedstatd_runtime_containers = %v, want the 2 the runtime lists", n)
		}

		type want struct{ name, container, pod, namespace, image string }
		wants := map[string]want{
			base:                            {name: base[1:]},
			base + "/kubepods":              {name: "kubepods"},
			base + "/kubepods/" + batch.QoS: {name: batch.QoS},
			batch.CgroupID():                {name: "pod" + batch.UID, pod: batch.Name, namespace: batch.Namespace},
			batch.SandboxCgroupID():         {name: batch.SandboxID, pod: batch.Name, namespace: batch.Namespace, image: sandboxImageLabel},
			batch.container.CgroupID():      {name: batch.container.ID, container: "crunch", pod: batch.Name, namespace: batch.Namespace, image: batch.want},
			shop.CgroupID():                 {name: "pod" + shop.UID, pod: shop.Name, namespace: shop.Namespace},
			shop.SandboxCgroupID():          {name: shop.SandboxID, pod: shop.Name, namespace: shop.Namespace, image: sandboxImageLabel},
			shop.container.CgroupID():       {name: shop.container.ID, container: "web", pod: shop.Name, namespace: shop.Namespace, image: shop.want},
		}
		for _, family := range cgroupFamilies {
			for id, w := range wants {
				l := seriesLabels(mfs, family, id)
				if l == nil {
					t.Errorf("%s: no series of %s", family, id)
					continue
				}
				got := want{name: l["name"], container: l["container"], pod: l["pod"], namespace: l["namespace"], image: l["image"]}
				if got != w {
					t.Errorf("%s{id=%q}: labels %+v, want %+v", family, id, got, w)
				}
			}
		}
		for _, p := range pods {
			if n, ok := value(mfs, "container_schedstat_tasks", p.container.CgroupID()); !ok || n < float64(p.spinners) {
				t.Errorf("%s: %v tasks, want at least its %d spinning processes", p.containerLabel(), n, p.spinners)
			}
		}
	})

	// Only the rows of the test's cgroups: the filter matches their ids.
	filter := "--filter=" + base + "/"
	for _, tc := range []struct {
		view, title    string
		starved, light string
		starvedIDs     []string
		container      bool
	}{
		{view: "pods", title: "POD", starved: batch.podLabel(), light: shop.podLabel(), starvedIDs: []string{batch.CgroupID()}},
		{view: "containers", title: "CONTAINER", starved: batch.containerLabel(), light: shop.containerLabel(), starvedIDs: []string{batch.container.CgroupID()}, container: true},
	} {
		t.Run(tc.view, func(t *testing.T) {
			r := runTop(t, "--once", "--interval=1s", "--view="+tc.view, "--from="+url, filter)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			t.Logf("\n%s", r.stdout)
			if !strings.Contains(r.stdout, "view: "+tc.view) {
				t.Errorf("not the %s view:\n%s", tc.view, r.stdout)
			}
			rows := tableRows(t, r.stdout, tc.title)
			checkRows(t, tc.view, rows, tc.starved, tc.light, pods, tc.container)

			j := runTop(t, "--output=json", "--interval=1s", "--view="+tc.view, "--from="+url, filter)
			if j.code != 0 {
				t.Fatalf("json: exit %d: %s", j.code, j.stderr)
			}
			var out topJSON
			if err := json.Unmarshal([]byte(j.stdout), &out); err != nil {
				t.Fatalf("json: %v:\n%s", err, j.stdout)
			}
			if out.View != tc.view {
				t.Errorf("json: view %q, want %q", out.View, tc.view)
			}
			var names []string
			for _, row := range out.Rows {
				names = append(names, row.Name)
			}
			checkRows(t, tc.view+" json", names, tc.starved, tc.light, pods, tc.container)
			if !slices.Equal(names, rows) {
				t.Errorf("json rows %q, table rows %q: not the same order and names", names, rows)
			}
			si := slices.IndexFunc(out.Rows, func(r topRow) bool { return r.Name == tc.starved })
			li := slices.IndexFunc(out.Rows, func(r topRow) bool { return r.Name == tc.light })
			if si < 0 || li < 0 {
				t.Fatalf("json: no row %q or %q:\n%s", tc.starved, tc.light, j.stdout)
			}
			s, l := out.Rows[si], out.Rows[li]
			if s.Pod != batch.Name || s.Namespace != batch.Namespace || !slices.Equal(s.IDs, tc.starvedIDs) {
				t.Errorf("json: first row %q is pod %q, namespace %q, cgroups %q; want %q, %q, %q",
					s.Name, s.Pod, s.Namespace, s.IDs, batch.Name, batch.Namespace, tc.starvedIDs)
			}
			// A container row names its container; a pod row none.
			if want := map[bool]string{true: batch.container.Name}[tc.container]; s.Container != want {
				t.Errorf("json: first row %q is container %q, want %q", s.Name, s.Container, want)
			}
			if s.Wait == nil || l.Wait == nil || s.Run == nil {
				t.Fatalf("json: no rates:\n%s", j.stdout)
			}
			// Seven spinning processes share two cores, so the six wait
			// about six times as long as the one; twice leaves room for a
			// busy machine.
			if *s.Wait <= 2**l.Wait || *l.Wait <= 0 {
				t.Errorf("json: %s waits %.3f s/s, %s %.3f s/s", s.Name, *s.Wait, l.Name, *l.Wait)
			}
			if s.Tasks < float64(batch.spinners) {
				t.Errorf("json: %s has %v tasks, want at least its %d spinning processes", s.Name, s.Tasks, batch.spinners)
			}
		})
	}
}

// checkRows checks the row names of top's pods or containers view of the
// pods: the starved one first, the light one after it, every row named
// by Kubernetes names, or for a sandbox container, which has none, by its
// short id; never by a cgroup path.
func checkRows(t *testing.T, what string, rows []string, starved, light string, pods []*kubePod, containers bool) {
	t.Helper()
	if len(rows) == 0 || rows[0] != starved {
		t.Errorf("%s: rows %q, want %q first", what, rows, starved)
	}
	if i := slices.Index(rows, light); i < 1 {
		t.Errorf("%s: rows %q, want %q after %q", what, rows, light, starved)
	}
	allowed := map[string]bool{}
	for _, p := range pods {
		if containers {
			allowed[p.containerLabel()] = true
			allowed[p.podLabel()+"/"+p.SandboxID[:13]] = true
		} else {
			allowed[p.podLabel()] = true
		}
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if !allowed[r] || seen[r] {
			t.Errorf("%s: row %q; want each of %v at most once", what, r, keys(allowed))
		}
		seen[r] = true
	}
	if !containers && len(rows) != len(pods) {
		t.Errorf("%s: %d rows %q, want one per pod", what, len(rows), rows)
	}
}

// keys returns the keys of m, sorted.
func keys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
