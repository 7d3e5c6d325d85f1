package container

import (
	"time"

	"github.com/schedstatd/schedstatd/schedstat"
)

// MaxExitAncestors is how many of a task's cgroup's ancestors an Exit
// names, nearest first.
const MaxExitAncestors = 7

// Exit is a task's final counters, delivered by an exit source at the moment
// the task exits.
type Exit struct {
	// TID and StartTime (clock ticks since boot) name the task.
	TID       int32
	StartTime uint64
	// Final holds the task's counters at exit.
	Final schedstat.Stat
	// Cgroup is the kernel id of the task's cgroup in the walked
	// hierarchy (the inode of its directory, as cgroupfs.Cgroup.ID), and
	// Ancestors the ids of that cgroup's ancestors, nearest first, zero
	// past the last one known. They are used only for a task no pass has
	// seen.
	Cgroup    uint64
	Ancestors [MaxExitAncestors]uint64
}

// TrackExits prepares the table for an exit source: from now on, tasks a
// pass retires are remembered until the exit source has delivered every
// record written up to a while after (see ExitsDelivered), so that their
// exit records add only the final stretch. Call it before the first pass,
// when an exit source will call Exit.
func (t *Table) TrackExits() { t.graves.enabled = true }

// ExitRecordDelay tells the table that its exit source writes a task's
// record up to d later than at the task's final switch away (an exit
// source at sched_process_free writes it from an RCU callback, which a
// kernel with lazy RCU may hold up to 10 s): retired tasks are remembered
// that much longer, so a late record still adds only the final stretch.
// Call it from the goroutine that owns the table.
func (t *Table) ExitRecordDelay(d time.Duration) {
	t.graves.delay = max(t.graves.delay, d.Nanoseconds())
}

// ExitsDelivered tells the table that the exit source has delivered every
// record the kernel wrote before monotonic time upTo (nanoseconds, the
// clock of CLOCK_MONOTONIC and bpf_ktime_get_ns). Retired tasks are
// remembered until then, plus a margin for the kernel's own exit path.
func (t *Table) ExitsDelivered(upTo int64) { t.graves.delivered(upTo) }

// Exit folds a task's final counters into the totals, exactly once: for a
// tracked task only the increase over its last read is added and the task
// is retired; for a task a pass retired, only the increase over what that
// pass counted; for a task no pass saw, all of it, credited to the cgroup
// x.Cgroup names. A record of a cgroup that no pass has listed yet waits
// for the next pass (bounded in count and time); only a cgroup that pass
// shows removed sends its time to the nearest ancestor it lists. Like Pass,
// Exit must be called from the goroutine that owns the table. Before the first
// pass it does nothing, unless the table was restored (see Restore).
func (t *Table) Exit(x Exit) {
	if t.closed {
		return
	}
	if t.pass == 0 {
		t.exitBeforeFirstPass(x)
		return
	}
	t.counters.ExitEvents++
	if e := t.tasks[x.TID]; e != nil && e.start == x.StartTime {
		if !t.exitMoved(e, x) {
			t.credit(e, e.cg, x.Final)
		}
		e.h.Close()
		delete(t.tasks, x.TID)
		t.counters.Exits++
		return
	}
	if g, ok := t.graves.dig(x.TID, x.StartTime); ok {
		d := x.Final.Since(g.last)
		if g.filled {
			d.RunNanoseconds = 0
			t.restored.LateExits++
		}
		cg := g.cg.live()
		cg.own = cg.own.Add(d)
		cg.readRun += d.RunNanoseconds // gone by the pass's read: in the counter
		return
	}
	if at, ok := t.takeMoves(x.TID, x.StartTime, schedstat.Stat{}, x.Final); ok {
		x.Final = x.Final.Since(at)
	}
	if t.runFilled(x) {
		x.Final.RunNanoseconds = 0
		t.restored.LateExits++
	}
	if cg := t.cgroups.byID[x.Cgroup]; cg != nil && cg.seen == t.pass {
		cg.own = cg.own.Add(x.Final)
		return
	}
	t.pending.hold(t, x)
}

// identity names a task: its id and start time.
type identity struct {
	tid   int32
	start uint64
}
