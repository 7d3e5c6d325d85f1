package top

import (
	"math"
	"path"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Ids and uids as kubelet and the runtimes write them.
const (
	cidA = "a172cedcae47474b615c54d510a5d84a8dea3032e958587430b413538be3f333"
	cidB = "6c8b4535ccc87f19061c4646189e33d78f01c8b63dc4e3cb2f630b1796ee93b6"
	cidC = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	uid1 = "6c2a7f1e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
	uid2 = "11111111-2222-3333-4444-555555555555"
)

// cg is a cgroup row with rates run and wait per second and tasks.
func cg(id string, run, wait, tasks float64) Row {
	return Row{Label: id, IDs: []string{id}, Known: true, Run: run, Wait: wait, Timeslices: 10 * run, Tasks: tasks}
}

// node is a node with two pods (one with a nested cgroup inside a
// container, one with a conmon monitor), a docker container and a systemd
// unit. Each cgroup's rates include its descendants.
func node() []Row {
	pod1 := "/kubepods/burstable/pod" + uid1
	pod2 := "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + "11111111_2222_3333_4444_555555555555" + ".slice"
	return []Row{
		cg("/", 2, 3, 100),
		cg("/kubepods", 1.5, 2.5, 12),
		cg("/kubepods/burstable", 1, 2, 8),
		cg(pod1, 1, 2, 8),
		cg(pod1+"/"+cidA, 0.75, 1.5, 6),
		cg(pod1+"/"+cidA+"/nested", 0.5, 1, 4),
		cg(pod1+"/"+cidB, 0.25, 0.5, 2),
		cg("/kubepods.slice", 0.5, 0.5, 4),
		cg(pod2, 0.5, 0.5, 4),
		cg(pod2+"/crio-"+cidC+".scope", 0.4, 0.5, 3),
		cg(pod2+"/crio-conmon-"+cidC+".scope", 0.1, 0, 1),
		cg("/docker", 0.25, 0.25, 2),
		cg("/docker/"+cidB[:12]+cidA[12:], 0.25, 0.25, 2),
		cg("/system.slice", 0.25, 0.25, 80),
		cg("/system.slice/sshd.service", 0.25, 0.25, 1),
	}
}

// sums is what a grouped row is compared by.
type sums struct {
	Label      string
	IDs        []string
	Run, Wait  float64
	Tasks      float64
	Known      bool
	Pod, Names string
}

func toSums(rows []Row) []sums {
	out := make([]sums, len(rows))
	for i, r := range rows {
		out[i] = sums{Label: r.Label, IDs: r.IDs, Run: r.Run, Wait: r.Wait, Tasks: r.Tasks, Known: r.Known, Pod: r.Pod, Names: joinNames(r.Namespace, r.Pod, r.Container)}
	}
	return out
}

var byLabel = cmpopts.SortSlices(func(a, b sums) bool { return a.Label < b.Label })

func TestGroupContainers(t *testing.T) {
	pod1 := "/kubepods/burstable/pod" + uid1
	got := toSums(Group(node(), ViewContainers))
	want := []sums{
		// The nested cgroup is inside container A: counted once, in A.
		{Label: cidA[:13], IDs: []string{pod1 + "/" + cidA}, Run: 0.75, Wait: 1.5, Tasks: 6, Known: true},
		{Label: cidB[:13], IDs: []string{pod1 + "/" + cidB}, Run: 0.25, Wait: 0.5, Tasks: 2, Known: true},
		// The conmon monitor is not the container.
		{Label: cidC[:13], IDs: []string{node()[9].IDs[0]}, Run: 0.4, Wait: 0.5, Tasks: 3, Known: true},
		{Label: (cidB[:12] + cidA[12:])[:13], IDs: []string{"/docker/" + cidB[:12] + cidA[12:]}, Run: 0.25, Wait: 0.25, Tasks: 2, Known: true},
	}
	if diff := cmp.Diff(want, got, byLabel); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
}

func TestGroupPods(t *testing.T) {
	got := toSums(Group(node(), ViewPods))
	want := []sums{
		// A pod is its pod cgroup, which holds its containers: not pod
		// plus containers.
		{Label: "pod" + uid1, IDs: []string{"/kubepods/burstable/pod" + uid1}, Run: 1, Wait: 2, Tasks: 8, Known: true},
		{Label: "pod" + uid2, IDs: []string{node()[8].IDs[0]}, Run: 0.5, Wait: 0.5, Tasks: 4, Known: true},
	}
	if diff := cmp.Diff(want, got, byLabel); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
}

func TestGroupCgroupsLeavesOutTheRoot(t *testing.T) {
	rows := node()
	got := Group(rows, ViewCgroups)
	if len(got) != len(rows)-1 {
		t.Errorf("%d rows, want %d", len(got), len(rows)-1)
	}
	for _, r := range got {
		if r.Label == "/" {
			t.Errorf("the root is a row")
		}
	}
	if n, ok := Root(rows); !ok || n.Run != 2 || n.Tasks != 100 {
		t.Errorf("Root = %+v, %v", n, ok)
	}
}

// With the daemon's labels, rows are named namespace/pod/container, and
// cgroups the path does not place in a pod are grouped by the labels.
func TestGroupByLabels(t *testing.T) {
	pod1 := "/kubepods/burstable/pod" + uid1
	label := func(r Row, ns, pod, c string) Row {
		r.Namespace, r.Pod, r.Container = ns, pod, c
		return r
	}
	rows := []Row{
		// kubelet's pod cgroup carries no container label.
		label(cg(pod1, 1, 2, 8), "shop", "web-0", ""),
		label(cg(pod1+"/"+cidA, 0.75, 1.5, 6), "shop", "web-0", "nginx"),
		label(cg(pod1+"/"+cidA+"/nested", 0.5, 1, 4), "shop", "web-0", "nginx"),
		// The pod's sandbox: its pod is known, it names no container.
		label(cg(pod1+"/"+cidB, 0, 0, 1), "shop", "web-0", ""),
		// A container outside kubepods, known only by its labels (a
		// runtime whose path shape is unknown).
		label(cg("/custom/one", 0.3, 0.2, 2), "batch", "job-1", "worker"),
		label(cg("/custom/two", 0.1, 0.1, 1), "batch", "job-1", "sidecar"),
	}
	containers := toSums(Group(rows, ViewContainers))
	wantContainers := []sums{
		{Label: "batch/job-1/sidecar", IDs: []string{"/custom/two"}, Run: 0.1, Wait: 0.1, Tasks: 1, Known: true, Pod: "job-1", Names: "batch/job-1/sidecar"},
		{Label: "batch/job-1/worker", IDs: []string{"/custom/one"}, Run: 0.3, Wait: 0.2, Tasks: 2, Known: true, Pod: "job-1", Names: "batch/job-1/worker"},
		{Label: "shop/web-0/nginx", IDs: []string{pod1 + "/" + cidA}, Run: 0.75, Wait: 1.5, Tasks: 6, Known: true, Pod: "web-0", Names: "shop/web-0/nginx"},
		{Label: "shop/web-0/" + cidB[:13], IDs: []string{pod1 + "/" + cidB}, Tasks: 1, Known: true, Pod: "web-0", Names: "shop/web-0"},
	}
	if diff := cmp.Diff(wantContainers, containers, byLabel); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
	pods := toSums(Group(rows, ViewPods))
	wantPods := []sums{
		// Two disjoint cgroups of one pod add up.
		// A pod row names no container, though its cgroups do.
		{Label: "batch/job-1", IDs: []string{"/custom/one", "/custom/two"}, Run: 0.4, Wait: 0.3, Tasks: 3, Known: true, Pod: "job-1", Names: "batch/job-1"},
		{Label: "shop/web-0", IDs: []string{pod1}, Run: 1, Wait: 2, Tasks: 8, Known: true, Pod: "web-0", Names: "shop/web-0"},
	}
	if diff := cmp.Diff(wantPods, pods, byLabel, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
}

// A group with a cgroup that has no rate yet has none either.
func TestGroupWithNewMember(t *testing.T) {
	rows := []Row{
		{Label: "/custom/one", IDs: []string{"/custom/one"}, Known: true, Run: 1, Wait: 1, Tasks: 1, Namespace: "ns", Pod: "p", Container: "a"},
		{Label: "/custom/two", IDs: []string{"/custom/two"}, Known: false, Tasks: 2, Namespace: "ns", Pod: "p", Container: "b"},
	}
	got := Group(rows, ViewPods)
	if len(got) != 1 || got[0].Known || got[0].Run != 0 || got[0].Tasks != 3 {
		t.Errorf("pod of a known and a new cgroup: %+v", got)
	}
}

func TestViewResolve(t *testing.T) {
	if v := ViewAuto.Resolve(node()); v != ViewContainers {
		t.Errorf("auto on a node with containers: %s", v)
	}
	plain := []Row{cg("/", 1, 1, 1), cg("/system.slice", 1, 1, 1), cg("/demo", 1, 1, 1)}
	if v := ViewAuto.Resolve(plain); v != ViewCgroups {
		t.Errorf("auto on a node without containers: %s", v)
	}
	// One idle container on a node of busy services: the busy ones show.
	idle := []Row{cg("/", 2, 1, 300), cg("/system.slice", 1.9, 1, 200), cg("/system.slice/build.service", 1.8, 1, 20),
		cg("/system.slice/docker-"+cidA+".scope", 0.001, 0, 1)}
	if v := ViewAuto.Resolve(idle); v != ViewCgroups {
		t.Errorf("auto with one idle container among busy services: %s", v)
	}
	// Before rates, everything shows.
	unrated := node()
	for i := range unrated {
		unrated[i].Known = false
	}
	if v := ViewAuto.Resolve(unrated); v != ViewCgroups {
		t.Errorf("auto without rates: %s", v)
	}
	// A nested cgroup is counted in its container's once: containers
	// doing 0.45 of 1 (not 0.9) are below half.
	nested := []Row{cg("/", 0.5, 0.5, 10), cg("/docker/"+cidA, 0.45, 0, 2), cg("/docker/"+cidA+"/inner", 0.45, 0, 2)}
	if v := ViewAuto.Resolve(nested); v != ViewCgroups {
		t.Errorf("auto with a nested container cgroup counted twice: %s", v)
	}
	if v := ViewPods.Resolve(plain); v != ViewPods {
		t.Errorf("pods resolved to %s", v)
	}
	for v, want := range map[View]View{ViewContainers: ViewPods, ViewPods: ViewCgroups, ViewCgroups: ViewContainers, ViewAuto: ViewContainers} {
		if got := v.Next(); got != want {
			t.Errorf("%s.Next() = %s, want %s", v, got, want)
		}
	}
}

// TestGroupThrottled checks a pod row's throttled time: the pod cgroup's
// own quota throttles only its own run queues, so the row takes the pod's
// or its containers' summed, whichever is larger; pressure is the pod
// cgroup's, which covers its containers.
func TestGroupThrottled(t *testing.T) {
	pod := "/kubepods/burstable/pod" + uid1
	with := func(r Row, throttled, pressure float64) Row {
		r.Throttled, r.HasThrottled, r.Pressure, r.HasPressure = throttled, true, pressure, true
		return r
	}
	rows := []Row{
		with(cg(pod, 0.5, 2, 3), 0.1, 1.2),
		with(cg(pod+"/"+cidA, 0.3, 1.5, 2), 0.7, 1),
		with(cg(pod+"/"+cidB, 0.2, 0.5, 1), 0.2, 0.4),
	}
	got := Group(rows, ViewPods)
	if len(got) != 1 {
		t.Fatalf("%d pod rows: %+v", len(got), got)
	}
	if g := got[0]; !g.HasThrottled || math.Abs(g.Throttled-0.9) > 1e-9 || !g.HasPressure || g.Pressure != 1.2 {
		t.Errorf("pod row throttled %v (%v), pressure %v (%v); want 0.9 and 1.2", g.Throttled, g.HasThrottled, g.Pressure, g.HasPressure)
	}
	for _, c := range Group(rows, ViewContainers) {
		want := map[string]float64{cidA: 0.7, cidB: 0.2}[path.Base(c.IDs[0])]
		if c.Throttled != want {
			t.Errorf("container %s throttled %v, want %v", c.IDs[0], c.Throttled, want)
		}
	}
}
