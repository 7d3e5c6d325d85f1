package container_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// rig is a table over a synthetic kernel and tree, with a check after each
// pass that no total fell.
type rig struct {
	t      *testing.T
	k      *synth.Kernel
	tree   *synth.Tree
	table  *container.Table
	totals map[string]schedstat.Stat
	usage  map[string]uint64
	kernel map[string]container.CgroupStats
}

func newRig(t *testing.T, paths ...string) *rig {
	r := &rig{t: t, k: synth.NewKernel(), tree: synth.NewTree(paths...), totals: map[string]schedstat.Stat{}, usage: map[string]uint64{}, kernel: map[string]container.CgroupStats{}}
	r.table = container.NewTable(r.tree, r.k)
	t.Cleanup(func() { r.table.Close() })
	return r
}

// spawn starts a task with counters run/wait/slices.
func (r *rig) spawn(tid int32, run, wait, slices uint64) *synth.Task {
	task := r.k.Spawn(tid)
	task.Stat = schedstat.Stat{RunNanoseconds: run, WaitNanoseconds: wait, Timeslices: slices}
	return task
}

// pass runs a pass, fails on an error, and fails if any cgroup's totals
// fell below what the previous pass reported for the same path.
func (r *rig) pass() *container.Snapshot {
	r.t.Helper()
	if err := r.table.Pass(); err != nil {
		r.t.Fatalf("Pass: %v", err)
	}
	s := r.table.Snapshot()
	for _, c := range s.Cgroups {
		// A series never falls: not when its cgroup is made again under
		// the same path, not across passes that did not show it.
		if prev, ok := r.totals[c.Path]; ok {
			if c.Stat.RunNanoseconds < prev.RunNanoseconds || c.Stat.WaitNanoseconds < prev.WaitNanoseconds || c.Stat.Timeslices < prev.Timeslices {
				r.t.Fatalf("%s fell from %+v to %+v", c.Path, prev, c.Stat)
			}
		}
		if prev, ok := r.usage[c.Path]; ok && c.HasUsage && c.UsageNanoseconds < prev {
			r.t.Fatalf("%s usage fell from %d to %d", c.Path, prev, c.UsageNanoseconds)
		}
		if prev, ok := r.kernel[c.Path]; ok {
			b, p := c.Bandwidth, c.Pressure
			if b.Periods < prev.Bandwidth.Periods || b.ThrottledNanoseconds < prev.Bandwidth.ThrottledNanoseconds || p.SomeNanoseconds < prev.Pressure.SomeNanoseconds {
				r.t.Fatalf("%s bandwidth or pressure fell: %+v %+v -> %+v %+v", c.Path, prev.Bandwidth, prev.Pressure, b, p)
			}
		}
		r.kernel[c.Path] = c
		r.totals[c.Path] = c.Stat
		if c.HasUsage {
			r.usage[c.Path] = c.UsageNanoseconds
		}
	}
	return s
}

func stat(run, wait, slices uint64) schedstat.Stat {
	return schedstat.Stat{RunNanoseconds: run, WaitNanoseconds: wait, Timeslices: slices}
}

// totalsOf returns path -> totals for the snapshot's cgroups.
func totalsOf(s *container.Snapshot) map[string]schedstat.Stat {
	m := map[string]schedstat.Stat{}
	for _, c := range s.Cgroups {
		m[c.Path] = c.Stat
	}
	return m
}

func TestPassRollsUpEveryThreadOnce(t *testing.T) {
	r := newRig(t, "/", "/a", "/a/b", "/a/b/c", "/d")
	r.spawn(1, 1, 10, 100)
	r.spawn(2, 2, 20, 200)
	r.spawn(3, 4, 40, 400)
	r.spawn(4, 8, 80, 800)
	r.spawn(5, 16, 160, 1600)
	r.tree.Set("/", 1)
	r.tree.Set("/a", 2)
	r.tree.Set("/a/b/c", 3, 4)
	r.tree.Set("/d", 5)
	s := r.pass()
	want := map[string]schedstat.Stat{
		"/":      stat(31, 310, 3100),
		"/a":     stat(14, 140, 1400),
		"/a/b":   stat(12, 120, 1200),
		"/a/b/c": stat(12, 120, 1200),
		"/d":     stat(16, 160, 1600),
	}
	if diff := cmp.Diff(want, totalsOf(s)); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	tasks := map[string]int{}
	for _, c := range s.Cgroups {
		tasks[c.Path] = c.Tasks
	}
	if diff := cmp.Diff(map[string]int{"/": 5, "/a": 3, "/a/b": 2, "/a/b/c": 2, "/d": 1}, tasks); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	if got := r.k.Handles; got != 5 {
		t.Errorf("open handles = %d, want 5 (one per task)", got)
	}

	// Increases, not lifetimes, are added from the second pass on.
	r.k.Task(3).Stat = stat(104, 140, 401)
	s = r.pass()
	if got, want := totalsOf(s)["/a/b/c"], stat(112, 220, 1201); got != want {
		t.Errorf("after increase: /a/b/c = %+v, want %+v", got, want)
	}
	if got, want := totalsOf(s)["/"], stat(131, 410, 3101); got != want {
		t.Errorf("after increase: / = %+v, want %+v", got, want)
	}
}

func TestExitKeepsWhatWasCounted(t *testing.T) {
	r := newRig(t, "/", "/a")
	r.spawn(7, 100, 50, 3)
	r.tree.Set("/a", 7)
	r.pass()
	r.k.Task(7).Stat = stat(150, 60, 4) // runs on, then exits unseen
	r.k.Exit(7)
	r.tree.Set("/a")
	s := r.pass()
	if got, want := totalsOf(s)["/a"], stat(100, 50, 3); got != want {
		t.Errorf("/a = %+v, want %+v (what the last pass saw)", got, want)
	}
	c := r.table.Counters()
	if c.Exits != 1 || c.Tracked != 0 || r.k.Handles != 0 {
		t.Errorf("exits=%d tracked=%d handles=%d, want 1 0 0", c.Exits, c.Tracked, r.k.Handles)
	}
}

func TestReuseKeepsOldTimeAndCountsNewFromItsStart(t *testing.T) {
	r := newRig(t, "/", "/a", "/b")
	r.spawn(9, 1000, 100, 10)
	r.tree.Set("/a", 9)
	r.pass()
	r.k.Exit(9)
	r.spawn(9, 5, 1, 1) // same id, another task, in another cgroup
	r.tree.Set("/a")
	r.tree.Set("/b", 9)
	s := r.pass()
	want := map[string]schedstat.Stat{"/": stat(1005, 101, 11), "/a": stat(1000, 100, 10), "/b": stat(5, 1, 1)}
	if diff := cmp.Diff(want, totalsOf(s)); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	if c := r.table.Counters(); c.Reuses != 1 || c.Exits != 1 {
		t.Errorf("reuses=%d exits=%d, want 1 1", c.Reuses, c.Exits)
	}

	// Reuse in the same cgroup, with the new task's counters lower than
	// the old one's: the total must not fall.
	r.k.Exit(9)
	r.spawn(9, 1, 1, 1)
	r.tree.Set("/b", 9)
	s = r.pass()
	if got, want := totalsOf(s)["/b"], stat(6, 2, 2); got != want {
		t.Errorf("/b = %+v, want %+v", got, want)
	}
}

func TestMigrationBringsOnlyTheIncrease(t *testing.T) {
	r := newRig(t, "/", "/a", "/b")
	r.spawn(3, 500, 50, 5)
	r.tree.Set("/a", 3)
	r.pass()
	r.k.Task(3).Stat = stat(700, 80, 9)
	r.tree.Set("/a")
	r.tree.Set("/b", 3)
	s := r.pass()
	want := map[string]schedstat.Stat{"/": stat(700, 80, 9), "/a": stat(500, 50, 5), "/b": stat(200, 30, 4)}
	if diff := cmp.Diff(want, totalsOf(s)); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
}

func TestRemovedCgroupStaysInAncestors(t *testing.T) {
	r := newRig(t, "/", "/a", "/a/b", "/a/b/c")
	r.spawn(1, 10, 1, 1)
	r.spawn(2, 20, 2, 2)
	r.tree.Set("/a/b", 1)
	r.tree.Set("/a/b/c", 2)
	r.pass()
	// Task 2 moves up to /a and runs; then /a/b/c and /a/b go, and task 1
	// exits.
	r.k.Task(2).Stat = stat(25, 3, 3)
	r.k.Exit(1)
	r.tree.Set("/a/b/c")
	r.tree.Set("/a/b")
	r.tree.Rmdir("/a/b/c")
	r.tree.Rmdir("/a/b")
	r.tree.Set("/a", 2)
	s := r.pass()
	want := map[string]schedstat.Stat{"/": stat(35, 4, 4), "/a": stat(35, 4, 4)}
	if diff := cmp.Diff(want, totalsOf(s)); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	// A cgroup made again at the same path is a new cgroup, whose series
	// goes on from what /a/b showed last (30 ns of its two tasks); its
	// parent keeps everything, counted once.
	r.tree.Mkdir("/a/b")
	r.spawn(4, 1, 1, 1)
	r.tree.Set("/a/b", 4)
	s = r.pass()
	want = map[string]schedstat.Stat{"/": stat(36, 5, 5), "/a": stat(36, 5, 5), "/a/b": stat(31, 4, 4)}
	if diff := cmp.Diff(want, totalsOf(s)); diff != "" {
		t.Errorf("after mkdir again (-want +got):\n%s", diff)
	}
}

// TestRecreatedCgroupSeriesNeverFall: a cgroup removed and made again
// under the same path between two passes (a new kernel id, a kernel
// counter from zero), and a kernel counter reset in place, leave every
// series where it was and growing from there; the rig fails the test if
// any series falls.
func TestRecreatedCgroupSeriesNeverFall(t *testing.T) {
	r := newRig(t, "/", "/a", "/a/b")
	setUsage := func(path string, ns uint64) {
		c := &r.tree.Cgroups[r.tree.Index(path)]
		c.UsageNanoseconds, c.HasUsage = ns, true
		// The other kernel counters start over with it.
		c.Bandwidth = cgroupfs.Bandwidth{Periods: ns / 10, ThrottledNanoseconds: ns / 2, HasThrottling: true}
		c.Pressure = cgroupfs.Pressure{SomeNanoseconds: ns / 3, HasSome: true}
	}
	task := r.spawn(1, 500, 50, 5)
	r.tree.Set("/a/b", 1)
	setUsage("/a/b", 500)
	r.pass()
	old := r.tree.ID("/a/b")
	// Between two passes: task 1 exits, /a/b is removed and made again,
	// a new task runs there.
	task.Stat = stat(600, 60, 6)
	r.k.Exit(1)
	r.tree.Rmdir("/a/b")
	r.tree.Mkdir("/a/b")
	if r.tree.ID("/a/b") == old {
		t.Fatal("the synthetic tree reused an id")
	}
	r.spawn(2, 7, 1, 1)
	r.tree.Set("/a/b", 2)
	setUsage("/a/b", 7)
	s := r.pass()
	b, _ := s.Lookup("/a/b")
	if want := stat(507, 51, 6); b.Stat != want || b.UsageNanoseconds != 507 {
		t.Errorf("/a/b = %+v usage %d, want %+v usage 507", b.Stat, b.UsageNanoseconds, want)
	}
	if b.Bandwidth.Periods != 50+0 || b.Bandwidth.ThrottledNanoseconds != 250+3 || b.Pressure.SomeNanoseconds != 166+2 {
		t.Errorf("/a/b bandwidth %+v pressure %+v: want each the predecessor's plus the new cgroup's", b.Bandwidth, b.Pressure)
	}
	if a, _ := s.Lookup("/a"); a.Stat != stat(507, 51, 6) {
		t.Errorf("/a = %+v: the old cgroup's time must count once", a.Stat)
	}
	// echo 0 > cpuacct.usage: the counter starts over in place.
	setUsage("/a/b", 3)
	s = r.pass()
	if b, _ := s.Lookup("/a/b"); b.UsageNanoseconds != 510 {
		t.Errorf("after a reset /a/b usage = %d, want 507 + 3", b.UsageNanoseconds)
	}
	// Removed, then made again a few passes later: the series resumes.
	r.k.Exit(2)
	r.tree.Rmdir("/a/b")
	r.pass()
	r.pass()
	r.tree.Mkdir("/a/b")
	setUsage("/a/b", 1)
	s = r.pass()
	if b, _ := s.Lookup("/a/b"); b.Stat != stat(507, 51, 6) || b.UsageNanoseconds != 511 {
		t.Errorf("made again later: /a/b = %+v usage %d, want %+v usage 511", b.Stat, b.UsageNanoseconds, stat(507, 51, 6))
	}
}

func TestReadErrorCostsOnlyThatTask(t *testing.T) {
	for _, tc := range []struct {
		err    error
		reason container.Reason
	}{
		{unix.EACCES, container.ReasonPermission},
		{schedstat.ErrParse, container.ReasonParse},
		{unix.EIO, container.ReasonOther},
	} {
		t.Run(tc.reason.String(), func(t *testing.T) {
			r := newRig(t, "/", "/a")
			r.spawn(1, 100, 10, 1)
			bad := r.spawn(2, 200, 20, 2)
			r.tree.Set("/a", 1, 2)
			r.pass()
			r.k.Task(1).Stat = stat(110, 11, 2)
			bad.Stat = stat(260, 26, 4)
			bad.Err = tc.err
			s := r.pass()
			if got, want := totalsOf(s)["/a"], stat(310, 31, 4); got != want {
				t.Errorf("/a = %+v, want %+v: only the failing task's increase may be missing", got, want)
			}
			if got := r.table.Counters().ReadErrorsFor(tc.reason); got != 1 {
				t.Errorf("read errors for %s = %d, want 1", tc.reason, got)
			}
			bad.Err = nil
			s = r.pass()
			if got, want := totalsOf(s)["/a"], stat(370, 37, 6); got != want {
				t.Errorf("after recovery /a = %+v, want %+v: the next good read catches up", got, want)
			}
		})
	}
}

func TestUnlistedLiveTaskIsNotCountedTwice(t *testing.T) {
	r := newRig(t, "/", "/a", "/b")
	r.spawn(5, 100, 10, 1)
	r.tree.Set("/a", 5)
	r.pass()
	// The task moved from /a to /b while the walk was between them: no
	// listing holds it this pass. Its handle still reads it.
	r.k.Task(5).Stat = stat(150, 15, 2)
	r.tree.Set("/a")
	s := r.pass()
	if got, want := totalsOf(s)["/"], stat(150, 15, 2); got != want {
		t.Errorf("/ = %+v, want %+v", got, want)
	}
	r.k.Task(5).Stat = stat(170, 17, 3)
	r.tree.Set("/b", 5)
	s = r.pass()
	want := map[string]schedstat.Stat{"/": stat(170, 17, 3), "/a": stat(150, 15, 2), "/b": stat(20, 2, 1)}
	if diff := cmp.Diff(want, totalsOf(s)); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	if c := r.table.Counters(); c.Unlisted != 1 || c.Reuses != 0 {
		t.Errorf("unlisted=%d reuses=%d, want 1 0", c.Unlisted, c.Reuses)
	}
}

func TestDuplicateListingReadsOnce(t *testing.T) {
	r := newRig(t, "/", "/a", "/b")
	r.spawn(5, 100, 10, 1)
	r.tree.Set("/a", 5)
	r.tree.Set("/b", 5)
	s := r.pass()
	if got, want := totalsOf(s)["/"], stat(100, 10, 1); got != want {
		t.Errorf("/ = %+v, want %+v", got, want)
	}
	if c := r.table.Counters(); c.Duplicates != 1 {
		t.Errorf("duplicates = %d, want 1", c.Duplicates)
	}
}

func TestListingErrorChangesNothing(t *testing.T) {
	r := newRig(t, "/", "/a")
	r.spawn(1, 100, 10, 1)
	r.tree.Set("/a", 1)
	before := r.pass()
	r.tree.Err = errors.New("root gone")
	if err := r.table.Pass(); err == nil {
		t.Fatal("Pass succeeded over a failing listing")
	}
	after := r.table.Snapshot()
	if diff := cmp.Diff(totalsOf(before), totalsOf(after)); diff != "" {
		t.Errorf("totals changed (-before +after):\n%s", diff)
	}
	if c := r.table.Counters(); c.FailedPasses != 1 || c.Tracked != 1 {
		t.Errorf("failed=%d tracked=%d, want 1 1", c.FailedPasses, c.Tracked)
	}
}

func TestCloseReleasesEveryHandle(t *testing.T) {
	r := newRig(t, "/")
	for tid := int32(1); tid <= 100; tid++ {
		r.spawn(tid, 1, 1, 1)
		r.tree.Cgroups[0].TIDs = append(r.tree.Cgroups[0].TIDs, tid)
	}
	r.pass()
	if r.k.Handles != 100 {
		t.Fatalf("handles = %d, want 100", r.k.Handles)
	}
	if err := r.table.Close(); err != nil {
		t.Fatal(err)
	}
	if r.k.Handles != 0 || r.table.Len() != 0 {
		t.Errorf("after Close: handles=%d len=%d, want 0 0", r.k.Handles, r.table.Len())
	}
	if err := r.table.Pass(); !errors.Is(err, container.ErrClosed) {
		t.Errorf("Pass after Close = %v, want ErrClosed", err)
	}
}

func TestSteadyStatePassDoesNotAllocate(t *testing.T) {
	r := newRig(t, "/", "/a", "/a/b", "/c")
	tid := int32(1)
	for _, p := range []string{"/", "/a", "/a/b", "/c"} {
		var tids []int32
		for range 250 {
			r.spawn(tid, 1, 1, 1)
			tids = append(tids, tid)
			tid++
		}
		r.tree.Set(p, tids...)
	}
	r.pass()
	r.pass()
	allocs := testing.AllocsPerRun(20, func() {
		if err := r.table.Pass(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("steady-state pass allocated %v times, want 0", allocs)
	}
}

func TestPassGivesUpWhenCancelled(t *testing.T) {
	r := newRig(t, "/", "/a")
	var tids []int32
	for tid := int32(1); tid <= 5000; tid++ {
		r.spawn(tid, 10, 1, 1)
		tids = append(tids, tid)
	}
	r.tree.Set("/a", tids...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.table.PassContext(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("PassContext with a done context = %v, want context.Canceled", err)
	}
	c := r.table.Counters()
	if c.AbortedPasses != 1 || c.Passes != 0 || c.Tracked >= 5000 {
		t.Errorf("aborted=%d passes=%d tracked=%d: want the pass given up early", c.AbortedPasses, c.Passes, c.Tracked)
	}
	// The next complete pass counts every task once.
	s := r.pass()
	if got, want := totalsOf(s)["/a"], stat(50000, 5000, 5000); got != want {
		t.Errorf("after an aborted pass: /a = %+v, want %+v", got, want)
	}
}

// errTree is a tree whose listing reports one cgroup it could not read.
type errTree struct{ *synth.Tree }

func (e errTree) List(l *cgroupfs.Listing) error {
	if err := e.Tree.List(l); err != nil {
		return err
	}
	l.Cgroups[1].Err = errors.New("tasks: permission denied")
	l.Errors++
	return nil
}

func TestCgroupReadErrorsCounted(t *testing.T) {
	r := newRig(t, "/", "/a")
	r.table = container.NewTable(errTree{r.tree}, r.k)
	r.pass()
	r.pass()
	if got := r.table.Counters().CgroupErrors; got != 2 {
		t.Errorf("CgroupErrors = %d after two passes with one unreadable cgroup, want 2", got)
	}
}

// TestUnreadSubtreeIsKept: a pass that cannot list a cgroup's children
// (EMFILE, EACCES) is not proof they are gone: they stay in the snapshot
// with their totals, their tasks stay tracked and go on counting through
// their handles, and the pass says it was partial. The next complete pass
// lists them again as they are, and only then is a removal a removal.
func TestUnreadSubtreeIsKept(t *testing.T) {
	r := newRig(t, "/", "/a", "/a/b", "/a/b/c")
	task := r.spawn(1, 100, 10, 1)
	r.tree.Set("/a/b/c", 1)
	r.pass()
	saved := append([]cgroupfs.Cgroup(nil), r.tree.Cgroups...)
	r.tree.Rmdir("/a/b/c")
	r.tree.Rmdir("/a/b")
	a := &r.tree.Cgroups[r.tree.Index("/a")]
	a.Err, a.SubtreeUnread = fmt.Errorf("cgroupfs: /a: %w", unix.EMFILE), true
	task.Stat = stat(150, 15, 2)
	s := r.pass()
	want := map[string]schedstat.Stat{"/": stat(150, 15, 2), "/a": stat(150, 15, 2), "/a/b": stat(150, 15, 2), "/a/b/c": stat(150, 15, 2)}
	if diff := cmp.Diff(want, totalsOf(s)); diff != "" {
		t.Errorf("partial pass (-want +got):\n%s", diff)
	}
	c := r.table.Counters()
	if c.Tracked != 1 || c.Exits != 0 || c.PartialPasses != 1 || c.CgroupsUnread != 3 || c.CgroupReadErrorsFor(container.ReasonFDLimit) != 1 {
		t.Errorf("counters %+v", c)
	}
	if s.PartialErr == nil || !errors.Is(s.PartialErr, unix.EMFILE) {
		t.Errorf("snapshot's partial error %v, want EMFILE", s.PartialErr)
	}
	r.tree.Cgroups = saved
	task.Stat = stat(170, 16, 3)
	s = r.pass()
	if got := totalsOf(s)["/a/b/c"]; got != stat(170, 16, 3) {
		t.Errorf("complete pass: /a/b/c = %+v", got)
	}
	if c := r.table.Counters(); c.PartialPasses != 1 || c.CgroupsUnread != 0 {
		t.Errorf("after a complete pass: %+v", c)
	}
	// An id-less entry (its directory could not even be examined) keeps
	// the state that last held its path, and its subtree.
	b := &r.tree.Cgroups[r.tree.Index("/a/b")]
	b.ID, b.Err, b.SubtreeUnread = 0, fmt.Errorf("cgroupfs: /a/b: %w", unix.EACCES), true
	r.tree.Rmdir("/a/b/c")
	s = r.pass()
	if diff := cmp.Diff([]string{"/", "/a", "/a/b", "/a/b/c"}, pathsOf(s)); diff != "" {
		t.Errorf("with /a/b unexaminable (-want +got):\n%s", diff)
	}
}

func pathsOf(s *container.Snapshot) []string {
	var p []string
	for _, c := range s.Cgroups {
		p = append(p, c.Path)
	}
	return p
}
