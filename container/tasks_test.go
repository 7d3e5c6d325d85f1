package container_test

import (
	"cmp"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedstat"
)

// TestCgroupTasks reads the tasks of one cgroup after a pass: its own and
// its descendants', with their kernel counters and start times, none of
// another subtree, and nothing for an id the pass does not have.
func TestCgroupTasks(t *testing.T) {
	r := newRig(t, "/", "/a", "/a/b", "/c")
	r.spawn(10, 100, 50, 1)
	r.spawn(11, 200, 60, 2)
	r.spawn(12, 300, 70, 3)
	r.spawn(13, 400, 80, 4)
	r.tree.Set("/a", 10)
	r.tree.Set("/a/b", 11, 12)
	r.tree.Set("/c", 13)
	r.pass()
	r.k.Task(11).Stat = schedstat.Stat{RunNanoseconds: 250, WaitNanoseconds: 90, Timeslices: 5}
	r.pass()

	id, ok := r.table.CgroupID("/a")
	if !ok || id != r.tree.ID("/a") {
		t.Fatalf("CgroupID(/a) = %d, %v; want %d", id, ok, r.tree.ID("/a"))
	}
	path, got, ok := r.table.CgroupTasks(id, nil)
	if !ok || path != "/a" {
		t.Fatalf("CgroupTasks(%d): %q, %v", id, path, ok)
	}
	slices.SortFunc(got, func(a, b container.TaskStats) int { return cmp.Compare(a.TID, b.TID) })
	want := []container.TaskStats{
		{TID: 10, StartTime: r.k.Task(10).Start, Stat: schedstat.Stat{RunNanoseconds: 100, WaitNanoseconds: 50, Timeslices: 1}, CgroupID: r.tree.ID("/a"), CgroupPath: "/a"},
		{TID: 11, StartTime: r.k.Task(11).Start, Stat: schedstat.Stat{RunNanoseconds: 250, WaitNanoseconds: 90, Timeslices: 5}, CgroupID: r.tree.ID("/a/b"), CgroupPath: "/a/b"},
		{TID: 12, StartTime: r.k.Task(12).Start, Stat: schedstat.Stat{RunNanoseconds: 300, WaitNanoseconds: 70, Timeslices: 3}, CgroupID: r.tree.ID("/a/b"), CgroupPath: "/a/b"},
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("tasks of /a (-want +got):\n%s", d)
	}
	if _, got, _ := r.table.CgroupTasks(r.tree.ID("/c"), nil); len(got) != 1 || got[0].TID != 13 {
		t.Errorf("tasks of /c: %+v", got)
	}
	if _, _, ok := r.table.CgroupTasks(1<<40, nil); ok {
		t.Error("an unknown id has tasks")
	}
	if _, ok := r.table.CgroupID("/nope"); ok {
		t.Error("an unknown path has an id")
	}

	// Removed: the cgroup is gone for the accessor, its task counted in
	// the parent it was folded into.
	r.tree.Set("/a/b")
	r.tree.Set("/a", 10, 11, 12)
	r.tree.Rmdir("/a/b")
	r.pass()
	if _, _, ok := r.table.CgroupTasks(want[1].CgroupID, nil); ok {
		t.Error("a removed cgroup still has tasks")
	}
	if _, got, _ := r.table.CgroupTasks(id, nil); len(got) != 3 {
		t.Errorf("after /a/b went: %d tasks of /a, want 3", len(got))
	}
}

// TestCgroupSubtree names a cgroup and its descendants of the last pass,
// parents first, and no longer a removed one.
func TestCgroupSubtree(t *testing.T) {
	r := newRig(t, "/", "/a", "/a/b", "/a/b/c", "/d")
	r.pass()
	if !r.table.TracksTasks() {
		t.Error("a table of tasks says it tracks none")
	}
	ref := func(p string) container.CgroupRef { return container.CgroupRef{ID: r.tree.ID(p), Path: p} }
	path, got, ok := r.table.CgroupSubtree(r.tree.ID("/a"), nil)
	if want := []container.CgroupRef{ref("/a"), ref("/a/b"), ref("/a/b/c")}; !ok || path != "/a" || !slices.Equal(got, want) {
		t.Errorf("CgroupSubtree(/a) = %q, %v, %v; want /a, %v", path, got, ok, want)
	}
	if _, got, _ := r.table.CgroupSubtree(r.tree.ID("/d"), nil); !slices.Equal(got, []container.CgroupRef{ref("/d")}) {
		t.Errorf("CgroupSubtree(/d) = %v", got)
	}
	gone := r.tree.ID("/a/b/c")
	r.tree.Rmdir("/a/b/c")
	r.pass()
	if _, _, ok := r.table.CgroupSubtree(gone, nil); ok {
		t.Error("a removed cgroup has a subtree")
	}
	if _, got, _ := r.table.CgroupSubtree(r.tree.ID("/a"), nil); !slices.Equal(got, []container.CgroupRef{ref("/a"), ref("/a/b")}) {
		t.Errorf("after /a/b/c went: %v", got)
	}
}

// TestCgroupTasksDoesNotAllocateBeyondOut reads into a buffer large enough.
func TestCgroupTasksDoesNotAllocateBeyondOut(t *testing.T) {
	r := newRig(t, "/", "/a")
	for tid := int32(1); tid <= 50; tid++ {
		r.spawn(tid, 1, 1, 1)
		r.tree.Set("/a", append(r.tree.Cgroups[r.tree.Index("/a")].TIDs, tid)...)
	}
	r.pass()
	buf := make([]container.TaskStats, 0, 64)
	id := r.tree.ID("/a")
	if n := testing.AllocsPerRun(20, func() { _, buf, _ = r.table.CgroupTasks(id, buf[:0]) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
	if len(buf) != 50 {
		t.Errorf("%d tasks, want 50", len(buf))
	}
}
