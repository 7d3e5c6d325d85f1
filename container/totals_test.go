package container_test

import (
	"fmt"
	"testing"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// fakeTotals is a kernel's per-cgroup totals, as an aggregating source
// keeps them.
type fakeTotals struct {
	m         map[uint64]container.CgroupTotal
	list      []container.CgroupTotal
	forgotten []uint64
	// late is added to an entry between the last read and Forget.
	late  map[uint64]schedstat.Stat
	exits uint64
	store uint64
}

func (f *fakeTotals) Store() uint64 { return f.store }

func (f *fakeTotals) Totals() []container.CgroupTotal { return f.list }

func (f *fakeTotals) Exits() uint64 { return f.exits }

func (f *fakeTotals) Forget(id uint64) (schedstat.Stat, bool) {
	t, ok := f.m[id]
	t.Stat = t.Stat.Add(f.late[id])
	delete(f.m, id)
	f.forgotten = append(f.forgotten, id)
	return t.Stat, ok
}

// add credits st to id, as a program would, with id's ancestors.
func (f *fakeTotals) add(id uint64, st schedstat.Stat, tasks int, ancestors ...uint64) {
	t := f.m[id]
	t.ID, t.Stat, t.Tasks = id, t.Stat.Add(st), tasks
	copy(t.Ancestors[:], ancestors)
	f.m[id] = t
}

// read is the source's read at the start of a pass.
func (f *fakeTotals) read() {
	f.list = f.list[:0]
	for _, t := range f.m {
		f.list = append(f.list, t)
	}
}

// totalsRig is a table of totals over a synthetic tree.
type totalsRig struct {
	*rig
	src *fakeTotals
	clk *clock
}

func newTotalsRig(t *testing.T, paths ...string) *totalsRig {
	r := &rig{t: t, k: synth.NewKernel(), tree: synth.NewTree(paths...), totals: map[string]schedstat.Stat{}, usage: map[string]uint64{}, kernel: map[string]container.CgroupStats{}}
	src := &fakeTotals{m: map[uint64]container.CgroupTotal{}}
	r.table = container.NewCgroupTable(r.tree, src)
	clk := &clock{ns: 1e9}
	container.SetClock(r.table, clk.now)
	t.Cleanup(func() { r.table.Close() })
	return &totalsRig{rig: r, src: src, clk: clk}
}

// pass reads the totals and runs a pass, checking that no series fell.
func (r *totalsRig) pass() *container.Snapshot {
	r.t.Helper()
	r.src.read()
	return r.rig.pass()
}

// TestTotalsCreditIncrease: each pass credits a cgroup the increase of its
// totals, rolled up, with the tasks the source counted.
func TestTotalsCreditIncrease(t *testing.T) {
	r := newTotalsRig(t, "/", "/a", "/a/b")
	root, a, b := r.tree.ID("/"), r.tree.ID("/a"), r.tree.ID("/a/b")
	r.src.add(b, stat(100, 10, 1), 2, a, root)
	r.src.add(a, stat(5, 1, 1), 1, root)
	s := r.pass()
	if got := totalsOf(s); got["/a/b"] != stat(100, 10, 1) || got["/a"] != stat(105, 11, 2) || got["/"] != stat(105, 11, 2) {
		t.Errorf("after one pass: %+v", got)
	}
	r.src.add(b, stat(50, 5, 1), 2)
	s = r.pass()
	if got := totalsOf(s)["/a/b"]; got != stat(150, 15, 2) {
		t.Errorf("/a/b = %+v, want 150/15/2", got)
	}
	if c, _ := s.Lookup("/a"); c.Tasks != 3 {
		t.Errorf("/a has %d tasks, want 3", c.Tasks)
	}
	if n := r.table.Counters().Tracked; n != 3 {
		t.Errorf("tracked %d, want 3", n)
	}
	r.src.exits = 7
	r.pass()
	if n := r.table.Counters().Exits; n != 7 {
		t.Errorf("exits %d, want the source's 7", n)
	}
}

// TestTotalsOfRemovedCgroup: a cgroup removed with totals in the kernel
// keeps what it had in its parent; what its tasks add later (zombies
// reaped after the rmdir) goes to the parent, counted; half a minute on,
// the source is told to drop the entry, with its last increase credited,
// and an entry made again for the id later counts whole, once.
func TestTotalsOfRemovedCgroup(t *testing.T) {
	r := newTotalsRig(t, "/", "/a", "/a/b")
	root, a, b := r.tree.ID("/"), r.tree.ID("/a"), r.tree.ID("/a/b")
	r.src.add(b, stat(100, 10, 1), 1, a, root)
	r.pass()
	r.tree.Rmdir("/a/b")
	r.src.add(b, stat(7, 1, 1), 0)
	s := r.pass()
	if got := totalsOf(s)["/a"]; got != stat(107, 11, 2) {
		t.Errorf("/a = %+v after the removal, want 107/11/2", got)
	}
	if c := r.table.Counters(); c.UnattributedTotals != 1 {
		t.Errorf("unattributed %d, want 1", c.UnattributedTotals)
	}
	r.clk.ns += 20e9
	r.pass()
	if len(r.src.forgotten) != 0 {
		t.Fatalf("forgotten %v after 20 s, want none", r.src.forgotten)
	}
	r.src.late = map[uint64]schedstat.Stat{b: stat(3, 0, 0)} // after the last read: Forget returns it
	r.clk.ns += 11e9
	s = r.pass()
	if len(r.src.forgotten) != 1 || r.src.forgotten[0] != b {
		t.Fatalf("forgotten %v, want [%d]", r.src.forgotten, b)
	}
	if got := totalsOf(s)["/a"]; got != stat(110, 11, 2) {
		t.Errorf("/a = %+v after the forget, want 110/11/2", got)
	}
	// A late credit after the delete makes the entry again, from zero.
	r.src.add(b, stat(2, 0, 0), 0, a, root)
	s = r.pass()
	if got := totalsOf(s)["/a"]; got != stat(112, 11, 2) {
		t.Errorf("/a = %+v after a late credit, want 112/11/2", got)
	}
	if c := r.table.Counters(); c.TotalsForgotten != 1 || c.UnattributedTotals != 2 {
		t.Errorf("counters %+v", c)
	}
}

// TestTotalsBelowUnreadSubtree: totals of a cgroup the pass cannot see,
// below a subtree it could not list, wait for a pass that can.
func TestTotalsBelowUnreadSubtree(t *testing.T) {
	r := newTotalsRig(t, "/", "/a")
	root, a := r.tree.ID("/"), r.tree.ID("/a")
	r.pass()
	r.tree.Mkdir("/a/new")
	n := r.tree.ID("/a/new")
	r.src.add(n, stat(40, 4, 4), 1, a, root)
	hidden := r.tree.Cgroups[r.tree.Index("/a/new")]
	r.tree.Rmdir("/a/new")
	ca := &r.tree.Cgroups[r.tree.Index("/a")]
	ca.Err, ca.SubtreeUnread = fmt.Errorf("cgroupfs: /a: %w", unix.EMFILE), true
	s := r.pass()
	if got := totalsOf(s)["/a"]; got != (schedstat.Stat{}) {
		t.Errorf("/a = %+v in a partial pass, want nothing yet", got)
	}
	ca = &r.tree.Cgroups[r.tree.Index("/a")]
	ca.Err, ca.SubtreeUnread = nil, false
	r.tree.Cgroups = append(r.tree.Cgroups, hidden)
	s = r.pass()
	if got := totalsOf(s)["/a/new"]; got != stat(40, 4, 4) {
		t.Errorf("/a/new = %+v, want its totals", got)
	}
	if c := r.table.Counters(); c.UnattributedTotals != 0 {
		t.Errorf("unattributed %d, want 0", c.UnattributedTotals)
	}
}

// TestTotalsUnplaced: entry 0, what the kernel could not place (the totals
// full, a task without a cgroup), goes to the root and is never forgotten.
func TestTotalsUnplaced(t *testing.T) {
	r := newTotalsRig(t, "/", "/a")
	r.src.add(0, stat(9, 9, 9), 0)
	r.pass()
	r.src.add(0, stat(1, 1, 1), 0)
	r.clk.ns += 60e9
	s := r.pass()
	if got := totalsOf(s)["/"]; got != stat(10, 10, 10) {
		t.Errorf("/ = %+v, want 10/10/10", got)
	}
	if len(r.src.forgotten) != 0 || r.table.Counters().UnattributedTotals != 0 {
		t.Errorf("forgotten %v, counters %+v", r.src.forgotten, r.table.Counters())
	}
}

// TestTotalsRestartSameStore: a table restored over a source whose totals
// are the ones the state was taken from goes on from what the saved table
// had credited: what was added after the save (passes whose state was not
// written, and the time no daemon ran) counts once, and nothing falls.
// Over another store it credits that store's totals whole, as a table
// does at its first pass: the source's owner gives it fresh totals then.
func TestTotalsRestartSameStore(t *testing.T) {
	r := newTotalsRig(t, "/", "/a")
	root, a := r.tree.ID("/"), r.tree.ID("/a")
	r.src.store = 7
	r.src.add(a, stat(100, 10, 1), 1, root)
	r.src.add(0, stat(1, 1, 1), 0)
	r.pass()
	saved := r.table.State()
	if saved.Totals.Store != 7 || len(saved.Totals.Credited) != 2 || saved.Totals.Credited[0] != (container.CreditedTotal{ID: 0, Stat: stat(1, 1, 1)}) {
		t.Fatalf("saved totals %+v", saved.Totals)
	}
	r.src.add(a, stat(20, 2, 2), 1)
	r.pass() // after the last write
	r.src.add(a, stat(30, 3, 3), 1)

	for _, tc := range []struct {
		store     uint64
		continued bool
		want      schedstat.Stat
	}{
		{7, true, stat(150, 15, 6)},
		{8, false, stat(250, 25, 7)}, // the old 100 restored, then the new store's 150
	} {
		src := &fakeTotals{m: map[uint64]container.CgroupTotal{}, store: tc.store}
		for id, tot := range r.src.m {
			src.m[id] = tot
		}
		table := container.NewCgroupTable(r.tree, src)
		if err := table.Restore(saved); err != nil {
			t.Fatal(err)
		}
		if got := table.Restored().TotalsContinued; got != tc.continued {
			t.Errorf("store %d: continued %v, want %v", tc.store, got, tc.continued)
		}
		src.read()
		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
		if got := totalsOf(table.Snapshot())["/a"]; got != tc.want {
			t.Errorf("store %d: /a = %+v after the restart, want %+v", tc.store, got, tc.want)
		}
		if got := totalsOf(table.Snapshot())["/"]; got.WaitNanoseconds < tc.want.WaitNanoseconds+1 {
			t.Errorf("store %d: / = %+v, want /a's and entry 0's", tc.store, got)
		}
		table.Close()
	}
	r.src.store = 0
	if s := r.table.State(); s.Totals.Store != 0 || len(s.Totals.Credited) != 0 {
		t.Errorf("totals of a store that ends with its source kept: %+v", s.Totals)
	}
}
