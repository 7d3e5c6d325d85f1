package container_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// exitOf is the record of task tid in the cgroup at path of r's tree,
// naming its ancestors as the kernel does.
func (r *rig) exitOf(tid int32, start uint64, final schedstat.Stat, path string) container.Exit {
	x := container.Exit{TID: tid, StartTime: start, Final: final, Cgroup: r.tree.ID(path)}
	i := 0
	for c := r.tree.Cgroups[r.tree.Index(path)]; c.Parent >= 0 && i < len(x.Ancestors); i++ {
		c = r.tree.Cgroups[c.Parent]
		x.Ancestors[i] = c.ID
	}
	return x
}

// clock is a settable monotonic clock for the table.
type clock struct{ ns int64 }

func (c *clock) now() int64 { return c.ns }

func TestExitRecordsCountOnceInEitherOrder(t *testing.T) {
	for _, tc := range []struct {
		name      string
		passFirst bool // the pass finds the task gone before its record arrives
	}{
		{name: "record then pass", passFirst: false},
		{name: "pass then record", passFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, "/", "/a")
			r.table.TrackExits()
			task := r.spawn(4, 100, 10, 1)
			r.tree.Set("/a", 4)
			r.pass()
			final := stat(180, 14, 3)
			task.Stat = final
			r.k.Exit(4)
			r.tree.Set("/a")
			x := r.exitOf(4, task.Start, final, "/a")
			if tc.passFirst {
				r.pass()
			}
			r.table.Exit(x)
			s := r.pass()
			if got := totalsOf(s)["/a"]; got != final {
				t.Errorf("/a = %+v, want the final counters %+v", got, final)
			}
			c := r.table.Counters()
			if c.Exits != 1 || c.Tracked != 0 || c.ExitEvents != 1 || r.k.Handles != 0 {
				t.Errorf("exits=%d tracked=%d events=%d handles=%d", c.Exits, c.Tracked, c.ExitEvents, r.k.Handles)
			}
		})
	}
}

// TestLateExitRecordCountsOnce: at any pass rate, a record that arrives
// long after the pass that found its task gone adds only the final
// stretch, as long as the exit source has not yet shown it delivered
// everything written by then; once it has, the task is forgotten.
func TestLateExitRecordCountsOnce(t *testing.T) {
	r := newRig(t, "/", "/a")
	clk := &clock{ns: 1e9}
	container.SetClock(r.table, clk.now)
	r.table.TrackExits()
	task := r.spawn(4, 100, 10, 1)
	r.tree.Set("/a", 4)
	r.pass()
	task.Stat = stat(150, 12, 2)
	r.pass()
	r.k.Exit(4)
	r.tree.Set("/a")
	// 1,000 passes 2 ms apart while the reader lags; it delivers up to
	// the time of the retirement only.
	for range 1000 {
		clk.ns += 2e6
		r.pass()
		r.table.ExitsDelivered(1e9)
	}
	if c := r.table.Counters(); c.RetiredTracked != 1 {
		t.Fatalf("%d retired tasks remembered, want 1", c.RetiredTracked)
	}
	r.table.Exit(r.exitOf(4, task.Start, stat(180, 14, 3), "/a"))
	if got := totalsOf(r.pass())["/a"]; got != stat(180, 14, 3) {
		t.Errorf("/a = %+v, want the final counters once", got)
	}
	// A retired task whose record never comes is forgotten once records
	// written well after its retirement have been delivered.
	r.spawn(5, 10, 1, 1)
	r.tree.Set("/a", 5)
	r.pass()
	r.k.Exit(5)
	r.tree.Set("/a")
	r.pass()
	if c := r.table.Counters(); c.RetiredTracked != 1 {
		t.Fatalf("%d retired tasks remembered, want 1", c.RetiredTracked)
	}
	if c := r.table.Counters(); c.RetiredUnrecorded != 0 {
		t.Fatalf("%d retired tasks unrecorded before delivery, want 0", c.RetiredUnrecorded)
	}
	clk.ns += 11e9
	r.table.ExitsDelivered(clk.ns)
	r.pass()
	if c := r.table.Counters(); c.RetiredTracked != 0 || c.RetiredEvicted != 0 || c.RetiredUnrecorded != 1 {
		t.Errorf("after delivery: %d remembered, %d evicted, %d unrecorded; want 0, 0 and 1 (the task whose record never came)", c.RetiredTracked, c.RetiredEvicted, c.RetiredUnrecorded)
	}
}

// TestExitRecordDelay: a source whose records come later (sched_process_free,
// lazy RCU) keeps retired tasks remembered for the delay beyond the usual
// margin, so a record 15 s after the retirement still adds only the final
// stretch; once records beyond the longer window are delivered, the task
// is forgotten.
func TestExitRecordDelay(t *testing.T) {
	r := newRig(t, "/", "/a")
	clk := &clock{ns: 1e9}
	container.SetClock(r.table, clk.now)
	r.table.TrackExits()
	r.table.ExitRecordDelay(10 * time.Second)
	task := r.spawn(4, 100, 10, 1)
	r.tree.Set("/a", 4)
	r.pass()
	r.k.Exit(4)
	r.tree.Set("/a")
	r.pass()
	clk.ns += 15e9
	r.table.ExitsDelivered(clk.ns)
	r.pass()
	if c := r.table.Counters(); c.RetiredTracked != 1 {
		t.Fatalf("15 s after retirement: %d retired tasks remembered, want 1", c.RetiredTracked)
	}
	r.table.Exit(r.exitOf(4, task.Start, stat(130, 11, 2), "/a"))
	if got := totalsOf(r.pass())["/a"]; got != stat(130, 11, 2) {
		t.Errorf("/a = %+v, want the final counters once", got)
	}
	if c := r.table.Counters(); c.RetiredUnrecorded != 0 {
		t.Errorf("%d retired tasks unrecorded, want 0: the late record came", c.RetiredUnrecorded)
	}
	r.spawn(5, 10, 1, 1)
	r.tree.Set("/a", 5)
	r.pass()
	r.k.Exit(5)
	r.tree.Set("/a")
	r.pass()
	clk.ns += 21e9
	r.table.ExitsDelivered(clk.ns)
	r.pass()
	if c := r.table.Counters(); c.RetiredTracked != 0 || c.RetiredEvicted != 0 || c.RetiredUnrecorded != 1 {
		t.Errorf("after delivery past the delay: %d remembered, %d evicted, %d unrecorded; want 0, 0 and 1", c.RetiredTracked, c.RetiredEvicted, c.RetiredUnrecorded)
	}
}

// TestExitOfUnseenTask: tasks born and dead between passes count whole, in
// the cgroup their record names: a known one at once; one made since the
// last pass once a pass lists it, not in its parent (a new container's
// first threads); one made and removed between passes in its nearest
// ancestor that the pass lists, counted unattributed.
func TestExitOfUnseenTask(t *testing.T) {
	r := newRig(t, "/", "/a", "/a/b")
	r.table.TrackExits()
	r.pass()
	r.tree.Mkdir("/a/new")
	r.tree.Mkdir("/a/new/ctr")
	r.tree.Mkdir("/a/gone")
	known := r.exitOf(50, 1, stat(7, 1, 1), "/a/b")
	fresh := r.exitOf(51, 2, stat(9, 2, 1), "/a/new/ctr")
	gone := r.exitOf(52, 3, stat(4, 1, 1), "/a/gone")
	r.tree.Rmdir("/a/gone")
	for _, x := range []container.Exit{known, fresh, gone} {
		r.table.Exit(x)
	}
	if c := r.table.Counters(); c.PendingExits != 2 {
		t.Errorf("%d records waiting, want 2", c.PendingExits)
	}
	s := r.pass()
	want := map[string]schedstat.Stat{"/": stat(20, 4, 3), "/a": stat(20, 4, 3), "/a/b": stat(7, 1, 1),
		"/a/new": stat(9, 2, 1), "/a/new/ctr": stat(9, 2, 1)}
	if diff := cmp.Diff(want, totalsOf(s)); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	if c := r.table.Counters(); c.UnattributedExits != 1 || c.ExitEvents != 3 || c.PendingExits != 0 {
		t.Errorf("unattributed=%d events=%d pending=%d, want 1 3 0", c.UnattributedExits, c.ExitEvents, c.PendingExits)
	}
}

// TestExitWaitsOutAPartialPass: a record of a new cgroup below a cgroup
// whose children a pass could not list waits for a pass that can tell,
// instead of going to the ancestor.
func TestExitWaitsOutAPartialPass(t *testing.T) {
	r := newRig(t, "/", "/a")
	r.table.TrackExits()
	r.pass()
	r.tree.Mkdir("/a/new")
	x := r.exitOf(60, 1, stat(5, 1, 1), "/a/new")
	r.table.Exit(x)
	// /a cannot be listed: the fd limit.
	hidden := r.tree.Cgroups[r.tree.Index("/a/new")]
	r.tree.Rmdir("/a/new")
	a := &r.tree.Cgroups[r.tree.Index("/a")]
	a.Err, a.SubtreeUnread = fmt.Errorf("cgroupfs: /a: %w", unix.EMFILE), true
	r.pass()
	if c := r.table.Counters(); c.PendingExits != 1 || c.UnattributedExits != 0 {
		t.Fatalf("after a partial pass: pending=%d unattributed=%d, want 1 0", c.PendingExits, c.UnattributedExits)
	}
	a = &r.tree.Cgroups[r.tree.Index("/a")]
	a.Err, a.SubtreeUnread = nil, false
	r.tree.Cgroups = append(r.tree.Cgroups, hidden)
	s := r.pass()
	if got := totalsOf(s)["/a/new"]; got != stat(5, 1, 1) {
		t.Errorf("/a/new = %+v, want the record's counters", got)
	}
}

func TestExitRecordOfOlderTaskLeavesReusedIdAlone(t *testing.T) {
	r := newRig(t, "/", "/a")
	r.table.TrackExits()
	old := r.spawn(8, 100, 10, 1)
	r.tree.Set("/a", 8)
	r.pass()
	r.k.Exit(8)
	young := r.spawn(8, 5, 1, 1)
	r.pass() // retires the old task, starts the new one
	r.table.Exit(r.exitOf(8, old.Start, stat(130, 12, 2), "/a"))
	young.Stat = stat(6, 1, 2)
	s := r.pass()
	if got, want := totalsOf(s)["/a"], stat(136, 13, 4); got != want {
		t.Errorf("/a = %+v, want %+v", got, want)
	}
	if c := r.table.Counters(); c.Tracked != 1 || c.Reuses != 1 {
		t.Errorf("tracked=%d reuses=%d, want 1 1", c.Tracked, c.Reuses)
	}
}
