package container_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/schedstat"
)

// restart stands for a daemon that stops and starts again: a new table over
// the same kernel and tree, restored from the old table's state.
func (r *rig) restart() container.RestoreStats {
	r.t.Helper()
	st := r.table.State()
	r.table.Close()
	r.table = container.NewTable(r.tree, r.k)
	if err := r.table.Restore(st); err != nil {
		r.t.Fatalf("Restore: %v", err)
	}
	return r.table.Restored()
}

// setUsage sets each listed cgroup's kernel counter.
func (r *rig) setUsage(usage map[string]uint64) {
	for path, v := range usage {
		c := &r.tree.Cgroups[r.tree.Index(path)]
		c.UsageNanoseconds, c.HasUsage = v, true
	}
}

func TestRestoreContinues(t *testing.T) {
	r := newRig(t, "/", "/a", "/a/b", "/c")
	r.spawn(10, 100, 10, 1)
	r.spawn(11, 200, 20, 2)
	r.spawn(12, 300, 30, 3)
	r.tree.Set("/a/b", 10, 11)
	r.tree.Set("/c", 12)
	r.pass()
	r.k.Task(10).Stat = stat(1000, 100, 10)
	before := totalsOf(r.pass())

	// While the daemon is down: 10 runs on, 12 exits and a new 12 starts
	// (a reused id), 13 starts and 11 moves to /c.
	r.restart()
	r.k.Task(10).Stat = stat(1500, 150, 15)
	r.k.Exit(12)
	r.spawn(12, 7, 7, 7)
	r.spawn(13, 50, 5, 5)
	r.k.Task(11).Stat = stat(260, 26, 3)
	r.tree.Set("/a/b", 10)
	r.tree.Set("/c", 11, 12, 13)
	got := totalsOf(r.pass())
	want := map[string]schedstat.Stat{
		"/a/b": before["/a/b"].Add(stat(500, 50, 5)),
		"/a":   before["/a"].Add(stat(500, 50, 5)),
		"/c":   before["/c"].Add(stat(60+7+50, 6+7+5, 1+7+5)),
		"/":    before["/"].Add(stat(500+60+7+50, 50+6+7+5, 5+1+7+5)),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("totals after the restart (-want +got):\n%s", diff)
	}
	if rs := r.table.Restored(); !rs.Done || rs.TasksResumed != 2 || rs.Tasks != 3 {
		t.Errorf("Restored() = %+v, want 2 of 3 tasks resumed", rs)
	}
}

func TestRestoreFoldsRemovedCgroups(t *testing.T) {
	r := newRig(t, "/", "/a", "/a/b")
	r.spawn(10, 100, 10, 1)
	r.tree.Set("/a/b", 10)
	before := totalsOf(r.pass())

	r.restart()
	r.k.Exit(10)
	r.tree.Rmdir("/a/b")
	got := totalsOf(r.pass())
	if got["/a"] != before["/a"] || got["/"] != before["/"] {
		t.Errorf("after /a/b went: / %+v, /a %+v; want %+v, %+v", got["/"], got["/a"], before["/"], before["/a"])
	}
	if _, ok := got["/a/b"]; ok {
		t.Errorf("/a/b still shown after its removal")
	}
	if rs := r.table.Restored(); rs.CgroupsGone != 1 {
		t.Errorf("CgroupsGone = %d, want 1", rs.CgroupsGone)
	}
	// Made again under its name, it goes on from its saved totals.
	r.tree.Mkdir("/a/b")
	r.spawn(11, 5, 5, 5)
	r.tree.Set("/a/b", 11)
	got = totalsOf(r.pass())
	if want := before["/a/b"].Add(stat(5, 5, 5)); got["/a/b"] != want {
		t.Errorf("/a/b made again: %+v, want %+v", got["/a/b"], want)
	}
	// And the tombstone itself survives a restart.
	r.tree.Set("/a/b")
	r.k.Exit(11)
	r.pass()
	r.tree.Rmdir("/a/b")
	shown := totalsOf(r.pass())["/a"]
	r.restart()
	r.pass()
	r.tree.Mkdir("/a/b")
	if got := totalsOf(r.pass()); got["/a/b"] != before["/a/b"].Add(stat(5, 5, 5)) || got["/a"] != shown {
		t.Errorf("after a restart with a tombstone: /a/b %+v, /a %+v", got["/a/b"], got["/a"])
	}
}

func TestRestoreExitBeforeFirstPass(t *testing.T) {
	r := newRig(t, "/", "/a")
	task := r.spawn(10, 100, 10, 1)
	r.tree.Set("/a", 10)
	before := totalsOf(r.pass())
	r.restart()
	r.k.Exit(10)
	r.tree.Set("/a")
	r.table.Exit(container.Exit{TID: 10, StartTime: task.Start, Final: stat(130, 13, 2), Cgroup: r.tree.ID("/a")})
	// A task the old table never saw, whose record names /a.
	r.table.Exit(container.Exit{TID: 20, StartTime: 99, Final: stat(1, 1, 1), Cgroup: r.tree.ID("/a")})
	got := totalsOf(r.pass())
	if want := before["/a"].Add(stat(31, 4, 2)); got["/a"] != want {
		t.Errorf("/a = %+v, want %+v", got["/a"], want)
	}
}

func TestRestoreFillsRunOfUnseenExits(t *testing.T) {
	r := newRig(t, "/", "/p", "/p/a", "/p/b")
	r.spawn(10, 100, 1, 1)
	r.spawn(11, 100, 1, 1)
	r.tree.Set("/p/a", 10)
	r.tree.Set("/p/b", 11)
	r.setUsage(map[string]uint64{"/": 5000, "/p": 4000, "/p/a": 1000, "/p/b": 1000})
	before := totalsOf(r.pass())

	r.restart()
	// While down: a thread in /p/a lived and died having run 70 ns, 10
	// ran 30 more in /p/a, and 11 ran 40 in /p/b, moved to /p/a and ran
	// 60 there.
	r.k.Task(10).Stat = stat(130, 1, 2)
	r.k.Task(11).Stat = stat(200, 1, 2)
	r.tree.Set("/p/a", 10, 11)
	r.tree.Set("/p/b")
	r.setUsage(map[string]uint64{"/": 5000 + 200, "/p": 4000 + 200, "/p/a": 1000 + 70 + 30 + 60, "/p/b": 1000 + 40})
	got := totalsOf(r.pass())
	// Credited: /p/a 30 + 100 (all of 11's increase), /p/b 0. Gaps: /p/a
	// 160-130 = 30 (the 70 unseen, less the 40 that 11 ran in /p/b),
	// /p/b 40, /p 200-130 = 70. 11's 40 in /p/b was credited in /p/a: the
	// fills stay within /p's 70, the time no task accounts for.
	fill := r.table.Restored().FilledRunNanoseconds
	if fill != 70 {
		t.Errorf("filled %d ns, want 70 (the unseen thread's run, no more)", fill)
	}
	if d := got["/p"].RunNanoseconds - before["/p"].RunNanoseconds; d != 200 {
		t.Errorf("/p ran %d ns while down by the table, %d by its counter", d, 200)
	}
	if got["/p/a"].WaitNanoseconds != before["/p/a"].WaitNanoseconds {
		t.Errorf("wait is never filled: /p/a %+v", got["/p/a"])
	}
}

func TestRestoreRefused(t *testing.T) {
	r := newRig(t, "/", "/a")
	r.spawn(10, 100, 10, 1)
	r.tree.Set("/a", 10)
	r.pass()
	st := r.table.State()
	if err := r.table.Restore(st); err == nil {
		t.Errorf("Restore after a pass succeeded")
	}
	for name, edit := range map[string]func(*container.State){
		"no cgroups":         func(s *container.State) { s.Cgroups = nil },
		"parent after child": func(s *container.State) { s.Cgroups[1].Parent = 1 },
		"duplicate id":       func(s *container.State) { s.Cgroups[1].ID = s.Cgroups[0].ID },
		"task cgroup":        func(s *container.State) { s.Tasks[0].Cgroup = 7 },
		"task id":            func(s *container.State) { s.Tasks[0].TID = 0 },
		"duplicate task":     func(s *container.State) { s.Tasks = append(s.Tasks, s.Tasks[0]) },
		"held tombstone":     func(s *container.State) { s.Tombstones = []container.TombstoneState{{Path: "/a"}} },
	} {
		t.Run(name, func(t *testing.T) {
			bad := r.table.State()
			edit(&bad)
			fresh := newRig(t, "/", "/a")
			if err := fresh.table.Restore(bad); !errors.Is(err, container.ErrInvalidState) {
				t.Fatalf("Restore = %v, want ErrInvalidState", err)
			}
			// Refused whole: the table starts from zero.
			fresh.spawn(10, 100, 10, 1)
			fresh.tree.Set("/a", 10)
			if got := totalsOf(fresh.pass())["/"]; got != stat(100, 10, 1) {
				t.Errorf("after a refused restore, / = %+v", got)
			}
		})
	}
}

// TestStateOfRestoredTable checks that a restored table that has not run a
// pass yet (a daemon stopped again at once) saves what it was given.
func TestStateOfRestoredTable(t *testing.T) {
	r := newRig(t, "/", "/a", "/a/b")
	r.spawn(10, 100, 10, 1)
	r.spawn(11, 200, 20, 2)
	r.tree.Set("/a/b", 10)
	r.tree.Set("/a", 11)
	r.pass()
	r.tree.Rmdir("/a/b")
	r.tree.Set("/a", 11, 10)
	r.pass() // /a/b is a tombstone now
	want := r.table.State()
	r.restart()
	got := r.table.State()
	byTID := cmpopts.SortSlices(func(a, b container.TaskState) bool { return a.TID < b.TID })
	if diff := cmp.Diff(want, got, byTID); diff != "" {
		t.Errorf("state of the restored table (-saved +got):\n%s", diff)
	}
	if len(got.Tombstones) != 1 || len(got.Tasks) != 2 {
		t.Errorf("state holds %d tombstones and %d tasks, want 1 and 2", len(got.Tombstones), len(got.Tasks))
	}
}

// TestRestoreKeepsKernelCounters checks that the kernel's counters of a
// cgroup (bandwidth, pressure) go on across a restart, also for a path made
// again meanwhile, whose counter started over.
func TestRestoreKeepsKernelCounters(t *testing.T) {
	r := newRig(t, "/", "/a")
	c := &r.tree.Cgroups[r.tree.Index("/a")]
	c.Pressure = cgroupfs.Pressure{SomeNanoseconds: 500, HasSome: true}
	c.Bandwidth = cgroupfs.Bandwidth{Periods: 10, ThrottledPeriods: 2, ThrottledNanoseconds: 70, HasThrottling: true}
	r.pass()
	r.restart()
	r.tree.Rmdir("/a")
	r.tree.Mkdir("/a")
	c = &r.tree.Cgroups[r.tree.Index("/a")]
	c.Pressure = cgroupfs.Pressure{SomeNanoseconds: 5, HasSome: true}
	c.Bandwidth = cgroupfs.Bandwidth{Periods: 1, HasThrottling: true}
	got, _ := r.pass().Lookup("/a")
	if got.Pressure.SomeNanoseconds != 505 || got.Bandwidth.Periods != 11 || got.Bandwidth.ThrottledNanoseconds != 70 {
		t.Errorf("after a restart and /a made again: pressure %+v, bandwidth %+v", got.Pressure, got.Bandwidth)
	}
}

// TestRestoreLateExitRecords: an exit source at sched_process_free writes
// a task's record up to ExitRecordDelay after the task was reaped, so the
// records of tasks that exited just before a restart can come after the
// new table's first pass, which filled their run from the cgroup's
// counter. They add their wait and timeslices, not that run again; a task
// that started after that pass listed counts whole.
func TestRestoreLateExitRecords(t *testing.T) {
	r := newRig(t, "/", "/a")
	r.table.TrackExits()
	r.spawn(10, 100, 10, 1)
	r.tree.Set("/a", 10)
	r.setUsage(map[string]uint64{"/": 1000, "/a": 100})
	r.pass()
	st := r.table.State()
	r.table.Close()

	// While down: 10 ran 50 more (wait 5, one timeslice) and exited; 11
	// lived in /a for 30 (wait 3, one timeslice).
	ten := r.k.Task(10)
	ten.Stat = stat(150, 15, 2)
	r.k.Exit(10)
	eleven := r.spawn(11, 30, 3, 1)
	r.k.Exit(11)
	r.tree.Set("/a")
	r.setUsage(map[string]uint64{"/": 1080, "/a": 180})

	r.table = container.NewTable(r.tree, r.k)
	r.table.TrackExits()
	// The first pass lists a clock tick after the last start.
	container.SetTicks(r.table, func() uint64 { return r.k.Now() + 1 })
	if err := r.table.Restore(st); err != nil {
		t.Fatal(err)
	}
	got := totalsOf(r.pass())
	if want := stat(180, 10, 1); got["/a"] != want {
		t.Fatalf("after the first pass /a = %+v, want %+v (run filled from the counter)", got["/a"], want)
	}
	// 13 starts in the clock tick by which that pass had read the
	// counters (before the read, for all the table can tell: its run may
	// be in the fill), 12 in the tick after (after the read); both exit
	// before the next pass lists them.
	thirteen := r.spawn(13, 40, 4, 1)
	r.k.Exit(13)
	twelve := r.spawn(12, 20, 2, 1)
	r.k.Exit(12)
	for _, task := range []*synth.Task{ten, eleven, thirteen, twelve} {
		r.table.Exit(r.exitOf(task.TID, task.Start, task.Stat, "/a"))
	}
	got = totalsOf(r.pass())
	if want := stat(180+20, 10+5+3+4+2, 1+1+1+1+1); got["/a"] != want {
		t.Errorf("after the late records /a = %+v, want %+v: 10's, 11's and 13's wait and timeslices, not their run (maybe filled); all of 12", got["/a"], want)
	}
	if n := r.table.Restored().LateExits; n != 3 {
		t.Errorf("LateExits = %d, want 3", n)
	}
}

// TestRestoreRetiredTasks: a task the last daemon found gone, whose exit
// record had not come when it saved its state, is in the State; its record,
// written by the kernel after the restart, adds its last stretch to where
// it ran, run included (it ran before the save, so no counter filled it),
// and nothing of what was counted before.
func TestRestoreRetiredTasks(t *testing.T) {
	r := newRig(t, "/", "/a")
	r.table.TrackExits()
	ten := r.spawn(10, 100, 10, 1)
	r.tree.Set("/a", 10)
	r.setUsage(map[string]uint64{"/": 1000, "/a": 100})
	r.pass()
	// 10 runs 50 more, exits and is reaped; the next pass retires it.
	ten.Stat = stat(150, 15, 2)
	r.k.Exit(10)
	r.tree.Set("/a")
	r.setUsage(map[string]uint64{"/": 1050, "/a": 150})
	r.pass()
	st := r.table.State()
	if len(st.Retired) != 1 || st.Retired[0].TID != 10 || st.Retired[0].Last != stat(100, 10, 1) {
		t.Fatalf("State.Retired = %+v, want task 10 as last read", st.Retired)
	}
	r.table.Close()

	r.table = container.NewTable(r.tree, r.k)
	r.table.TrackExits()
	container.SetTicks(r.table, func() uint64 { return r.k.Now() + 1 })
	if err := r.table.Restore(st); err != nil {
		t.Fatal(err)
	}
	r.pass()
	r.table.Exit(r.exitOf(10, ten.Start, ten.Stat, "/a"))
	got := totalsOf(r.pass())
	if want := stat(150, 15, 2); got["/a"] != want {
		t.Errorf("/a = %+v, want %+v: the retired task's last stretch once", got["/a"], want)
	}
}

// earlyReader is a RestoreLister over a synthetic tree whose ListCounters
// shows each cgroup's counter as read before the tasks' counters: less by
// what the cgroup's busy task ran between the two reads.
type earlyReader struct {
	*synth.Tree
	early    map[string]uint64 // path -> the counter read before the tasks
	restored int               // calls of ListCounters
}

func (e *earlyReader) ListCounters(l *cgroupfs.Listing) error {
	e.restored++
	if err := e.Tree.List(l); err != nil {
		return err
	}
	for i := range l.Cgroups {
		c := &l.Cgroups[i]
		c.TIDs = nil
		if u, ok := e.early[c.Path]; ok {
			c.UsageNanoseconds = u
		}
	}
	return nil
}

// TestRestoreListsCountersFirst restarts over a lister that reads tasks
// before cgroups: the first pass of the restored table reads the counters
// first (ListCounters) and fills from them, so the 20 ns its busy task ran
// after the read of its counters is not filled as the run of a task that
// exited unseen (List's counter, read after the tasks', would fill 50);
// later passes list with List alone.
func TestRestoreListsCountersFirst(t *testing.T) {
	r := newRig(t, "/", "/p")
	lister := &earlyReader{Tree: r.tree, early: map[string]uint64{}}
	r.table = container.NewTable(lister, r.k)
	r.spawn(10, 100, 1, 1)
	r.tree.Set("/p", 10)
	r.setUsage(map[string]uint64{"/": 1000, "/p": 500})
	r.pass()

	st := r.table.State()
	r.table.Close()
	r.table = container.NewTable(lister, r.k)
	if err := r.table.Restore(st); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	// While down: 10 ran 50 ns, a thread of /p lived and died having run
	// 30. The pass reads 10's counters, then 10 runs 20 ns more before
	// the walk reads /p's counter; the walk before the tasks' read read
	// it without those 20.
	r.k.Task(10).Stat = stat(100+50, 1, 2)
	r.setUsage(map[string]uint64{"/": 1100, "/p": 500 + 50 + 30 + 20})
	lister.early["/p"] = 500 + 50 + 30
	lister.early["/"] = 1100 - 20
	r.pass()
	if lister.restored != 1 {
		t.Fatalf("ListCounters called %d times in the restored pass, want 1", lister.restored)
	}
	if fill := r.table.Restored().FilledRunNanoseconds; fill != 30 {
		t.Errorf("filled %d ns, want 30: the unseen thread's run, not the busy task's 20 after its counters were read", fill)
	}
	r.pass()
	if lister.restored != 1 {
		t.Errorf("ListCounters called in a pass after the restored one")
	}
}

// TestRestoreLateExitRun: exit and move records fed after the last pass
// read the counters (the daemon stopping drains them) credit run the saved
// counter does not hold yet, of a task that pass read alive and of one it
// never saw. The State says how much (LateRun), and the restored table does
// not fill it again from the counter's growth; a retired task's record is
// not late (it was gone when the counter was read).
func TestRestoreLateExitRun(t *testing.T) {
	r := newRig(t, "/", "/a", "/b")
	r.table.TrackExits()
	alive := r.spawn(10, 100, 1, 1)
	gone := r.spawn(11, 100, 1, 1)
	r.tree.Set("/a", 10, 11)
	r.setUsage(map[string]uint64{"/": 1000, "/a": 200, "/b": 0})
	r.pass()
	// 11 runs 20 more and exits; the next pass retires it and reads
	// /a's counter.
	gone.Stat = stat(120, 1, 2)
	r.k.Exit(11)
	r.tree.Set("/a", 10)
	r.setUsage(map[string]uint64{"/": 1020, "/a": 220})
	before := totalsOf(r.pass())

	// After that pass: 11's record; 10 runs 15 more, moves to /b, runs
	// 15 there and exits; 12 lives and dies in /a having run 40. Their
	// records come before the state is written.
	r.table.Exit(r.exitOf(11, gone.Start, gone.Stat, "/a"))
	r.table.Migrate(r.moveOf(10, alive.Start, stat(115, 1, 2), "/a", "/b"))
	alive.Stat = stat(130, 1, 2)
	r.k.Exit(10)
	twelve := r.spawn(12, 40, 1, 1)
	r.k.Exit(12)
	r.table.Exit(r.exitOf(10, alive.Start, alive.Stat, "/b"))
	r.table.Exit(r.exitOf(12, twelve.Start, twelve.Stat, "/a"))
	st := r.table.State()
	if got := st.Cgroups[r.stateIndex(st, "/a")].LateRun; got != 15+40 {
		t.Errorf("LateRun of /a = %d, want 55: 10's 15 before its move and 12's 40, not 11's stretch", got)
	}
	if got := st.Cgroups[r.stateIndex(st, "/b")].LateRun; got != 15 {
		t.Errorf("LateRun of /b = %d, want 15: 10's last 15", got)
	}

	// While down: a thread lives and dies in /a having run 50.
	r.table.Close()
	r.table = container.NewTable(r.tree, r.k)
	r.table.TrackExits()
	if err := r.table.Restore(st); err != nil {
		t.Fatal(err)
	}
	r.tree.Set("/a")
	r.setUsage(map[string]uint64{"/": 1020 + 70 + 50, "/a": 220 + 55 + 50, "/b": 15})
	got := totalsOf(r.pass())
	if fill := r.table.Restored().FilledRunNanoseconds; fill != 50 {
		t.Errorf("filled %d ns, want 50: the unseen thread's run, not the 70 the records counted before the save", fill)
	}
	if d := got["/a"].RunNanoseconds - before["/a"].RunNanoseconds; d != 20+15+40+50 {
		t.Errorf("/a ran %d ns since, want %d", d, 20+15+40+50)
	}
	if d := got["/b"].RunNanoseconds - before["/b"].RunNanoseconds; d != 15 {
		t.Errorf("/b ran %d ns since, want 15", d)
	}
}

// stateIndex returns the index of the cgroup at path in st.
func (r *rig) stateIndex(st container.State, path string) int {
	r.t.Helper()
	for i, c := range st.Cgroups {
		if c.Path == path {
			return i
		}
	}
	r.t.Fatalf("%s not in the state", path)
	return -1
}

// TestRestoreGravesNotUnrecorded: the tasks of a restored State that were
// gone at the restore had no record due, so when none comes they are
// forgotten without being counted unrecorded; a task retired after the
// restore whose record never comes is.
func TestRestoreGravesNotUnrecorded(t *testing.T) {
	r := newRig(t, "/", "/a")
	r.table.TrackExits()
	ten := r.spawn(10, 100, 10, 1)
	r.spawn(11, 100, 10, 1)
	r.tree.Set("/a", 10, 11)
	r.setUsage(map[string]uint64{"/": 1000, "/a": 200})
	r.pass()
	// 10 exits and a pass retires it before the save; 11 exits while no
	// daemon runs.
	ten.Stat = stat(150, 15, 2)
	r.k.Exit(10)
	r.tree.Set("/a", 11)
	r.pass()
	st := r.table.State()
	r.table.Close()
	r.k.Exit(11)
	r.tree.Set("/a")

	r.table = container.NewTable(r.tree, r.k)
	clk := &clock{ns: 1e9}
	container.SetClock(r.table, clk.now)
	r.table.TrackExits()
	container.SetTicks(r.table, func() uint64 { return r.k.Now() + 1 })
	if err := r.table.Restore(st); err != nil {
		t.Fatal(err)
	}
	r.pass()
	if c := r.table.Counters(); c.RetiredTracked != 2 {
		t.Fatalf("%d retired tasks remembered after the restore, want 2 (10 and 11)", c.RetiredTracked)
	}
	r.spawn(12, 10, 1, 1)
	r.tree.Set("/a", 12)
	r.pass()
	r.k.Exit(12)
	r.tree.Set("/a")
	r.pass()
	clk.ns += 30e9
	r.table.ExitsDelivered(clk.ns)
	r.pass()
	if c := r.table.Counters(); c.RetiredTracked != 0 || c.RetiredUnrecorded != 1 {
		t.Errorf("after delivery: %d remembered, %d unrecorded; want 0 and 1 (12, not the restored 10 and 11)", c.RetiredTracked, c.RetiredUnrecorded)
	}
}
