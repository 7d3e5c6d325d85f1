package container

import (
	"context"
	"errors"
	"fmt"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// ErrClosed is returned by Pass after Close.
var ErrClosed = errors.New("container: table closed")

// minRebuild is the slack below which an oversized task map is left alone:
// rebuilding a small map saves little and costs an allocation.
const minRebuild = 1024

// entry is one tracked task.
type entry struct {
	h     TaskHandle
	start uint64
	last  schedstat.Stat // counters at the last good read
	cg    *cgroupState   // cgroup the last increase was credited to
	seen  uint64         // pass that last read or listed the task
}

// A RestoreLister is a Lister whose List reads the tasks' counters before
// the cgroups' (a BPF source that reads every task at once, then walks the
// hierarchy). ListCounters lists the cgroups and their CPU counters alone,
// reading no task: the first pass of a restored table runs it before
// List and takes each cgroup's counter from it, so that the run time that
// pass fills from the counters (restore.go) is never more than the tasks
// it did not see ran.
type RestoreLister interface {
	cgroupfs.Lister
	ListCounters(l *cgroupfs.Listing) error
}

// Table is the node-wide task table and the per-cgroup totals. It is owned
// by one goroutine: Pass, Exit, Snapshot and Close must not be called
// concurrently.
type Table struct {
	lister  cgroupfs.Lister
	opener  TaskOpener
	listing cgroupfs.Listing

	tasks map[int32]*entry
	peak  int // largest len(tasks) since the map was made

	cgroups  cgroupSet
	graves   graveyard
	pending  pendingExits
	moved    movedTasks // moves of tasks no pass has seen (migrate.go)
	pass     uint64
	marked   int // tasks read or listed in this pass
	closed   bool
	counters Counters
	// clock returns the monotonic clock in nanoseconds, the clock the
	// kernel stamps exit records with; ticks returns the boot clock in
	// the clock ticks of task start times. Tests replace them.
	clock func() int64
	ticks func() uint64
	// partialErr is the first error of the last pass that could not read
	// the whole tree, nil after a complete pass.
	partialErr error
	// restore is what a Restore left for the first complete pass, and
	// restored what it brought back (restore.go).
	restore  *restoreState
	restored RestoreStats
	// filledUpTo is set by the first pass of a restored table that filled
	// run-time gaps: the boot clock, in clock ticks, by which it had read
	// the cgroups' counters.
	filledUpTo uint64
	stateGen   uint64 // StateInto calls, to tell current indexes from old
	// totals is set for a table of per-cgroup totals (NewCgroupTable).
	totals *totalsState
}

// NewTable returns a table that lists cgroups with lister and opens tasks
// with opener.
func NewTable(lister cgroupfs.Lister, opener TaskOpener) *Table {
	return &Table{
		lister:  lister,
		opener:  opener,
		tasks:   make(map[int32]*entry),
		cgroups: newCgroupSet(),
		clock:   monotonicNow,
		ticks:   schedstat.BootTicks,
	}
}

// Pass lists the hierarchy, reads every listed task once, folds tasks that
// exited and cgroups that were removed, and rolls the totals up. If the
// listing fails, nothing changes and the error is returned. A steady-state
// pass over known tasks and cgroups allocates nothing.
func (t *Table) Pass() error { return t.PassContext(context.Background()) }

// cancelCheck is how many tasks a pass reads between looks at its context.
const cancelCheck = 1024

// PassContext is Pass that gives up, between two tasks, once ctx is done,
// returning ctx's error: a daemon told to stop does not finish a long pass
// over tens of thousands of new tasks first. What the pass had read stays
// counted and its tasks stay tracked; the next complete pass brings the
// totals and the snapshot up to date.
func (t *Table) PassContext(ctx context.Context) error {
	if t.closed {
		return ErrClosed
	}
	if err := t.list(); err != nil {
		t.counters.FailedPasses++
		return fmt.Errorf("list cgroups: %w", err)
	}
	if len(t.listing.Cgroups) == 0 {
		t.counters.FailedPasses++
		return errors.New("list cgroups: empty listing")
	}
	t.pass++
	t.marked = 0
	t.countCgroupErrors()
	order := t.cgroups.begin(t.pass, &t.listing)
	if order[0] == nil {
		// The lister broke its contract: the root always has an id.
		t.pass--
		t.counters.FailedPasses++
		return fmt.Errorf("list cgroups: root %s has no id", t.listing.Cgroups[0].Path)
	}
	t.pending.resolve(t)
	if t.totals != nil {
		t.creditTotals()
	}
	n := 0
	for i := range t.listing.Cgroups {
		cg := order[i]
		for _, tid := range t.listing.Cgroups[i].TIDs {
			if n++; n%cancelCheck == 0 {
				if err := ctx.Err(); err != nil {
					t.counters.AbortedPasses++
					return err
				}
			}
			t.account(tid, cg)
		}
	}
	if t.marked != len(t.tasks) {
		// Some tracked task was not listed: a zombie, a task that moved
		// mid-walk, or one that exited.
		t.sweep()
	}
	if t.restore != nil {
		t.finishRestore()
	}
	now := t.clock()
	if t.totals != nil {
		t.forgetTotals()
	}
	t.cgroups.end(t.pass, now)
	for _, cg := range t.cgroups.order {
		cg.readRun = cg.own.RunNanoseconds // what the pass read is credited
	}
	t.graves.expire()
	t.moved.expire(now)
	t.shrink()
	t.listing.Trim()
	t.counters.Passes++
	t.counters.CgroupsRead, t.counters.CgroupsUnread = t.cgroups.read, t.cgroups.unread
	if t.cgroups.unread > 0 {
		t.counters.PartialPasses++
	}
	return nil
}

// list fills t.listing. In the first pass of a restored table it notes
// the boot clock by which the listing's cgroup counters had been read, and
// over a RestoreLister takes them from a listing made before the tasks'
// counters were read.
func (t *Table) list() error {
	rs := t.restore
	if rs == nil {
		return t.lister.List(&t.listing)
	}
	rl, ok := t.lister.(RestoreLister)
	if !ok {
		err := t.lister.List(&t.listing)
		rs.countersReadBy = t.ticks()
		return err
	}
	var early cgroupfs.Listing
	if err := rl.ListCounters(&early); err != nil {
		return err
	}
	rs.countersReadBy = t.ticks()
	if err := t.lister.List(&t.listing); err != nil {
		return err
	}
	t.listing.UseEarlierUsage(&early)
	return nil
}

// countCgroupErrors counts the listing's cgroups that could not be read
// whole, by reason, and keeps the first error for the snapshot.
func (t *Table) countCgroupErrors() {
	t.partialErr = nil
	if t.listing.Errors == 0 {
		return
	}
	t.counters.CgroupErrors += uint64(t.listing.Errors)
	for i := range t.listing.Cgroups {
		if err := t.listing.Cgroups[i].Err; err != nil {
			t.counters.CgroupReadErrors[ReasonOf(err)]++
			if t.partialErr == nil {
				t.partialErr = err
			}
		}
	}
}

// account reads the listed task tid and credits its increase to cg.
func (t *Table) account(tid int32, cg *cgroupState) {
	if tid <= 0 {
		// A task outside the reader's PID namespace (kernels before 6.18).
		return
	}
	e := t.tasks[tid]
	if e == nil {
		t.add(tid, cg)
		return
	}
	if e.seen == t.pass {
		// Listed twice in one pass: it moved while the walk was between
		// its two cgroups. It was read once already.
		t.counters.Duplicates++
		return
	}
	st, err := e.h.Read()
	switch {
	case err == nil:
		t.credit(e, cg, st)
		cg.tasks++
	case schedstat.IsGone(err):
		// The task behind e was reaped. If the id is taken again, that is
		// another task: it counts from its own start.
		t.retire(tid, e)
		if t.add(tid, cg) {
			t.counters.Reuses++
		}
	default:
		t.readError(err)
		t.mark(e)
		e.cg = cg
		cg.tasks++
	}
}

// add opens a task seen for the first time and credits its counters since
// its start to cg. It reports whether the task is now tracked.
func (t *Table) add(tid int32, cg *cgroupState) bool {
	h, err := t.opener.Open(tid)
	if err != nil {
		if !schedstat.IsGone(err) {
			t.readError(err)
		}
		return false
	}
	st, err := h.Read()
	if err != nil {
		h.Close()
		if !schedstat.IsGone(err) {
			t.readError(err)
		}
		return false
	}
	e := &entry{h: h, start: h.StartTime()}
	t.resume(tid, e)
	t.startFromMoves(tid, e, st)
	t.credit(e, cg, st)
	cg.tasks++
	t.tasks[tid] = e
	t.peak = max(t.peak, len(t.tasks))
	return true
}

// credit adds the increase of st over e's last reading to cg.
func (t *Table) credit(e *entry, cg *cgroupState, st schedstat.Stat) {
	cg = cg.live()
	cg.own = cg.own.Add(st.Since(e.last))
	e.last = st
	e.cg = cg
	t.mark(e)
}

// mark records that e was read or listed in this pass.
func (t *Table) mark(e *entry) {
	if e.seen != t.pass {
		e.seen = t.pass
		t.marked++
	}
}

// sweep reads every tracked task this pass did not list. A task that is
// still readable is alive but was missed by the walk, or is a zombie whose
// counters are final: its increase goes to the cgroup it was last credited
// to. A task that is gone is retired with what was counted for it.
func (t *Table) sweep() {
	for tid, e := range t.tasks {
		if e.seen == t.pass {
			continue
		}
		st, err := e.h.Read()
		switch {
		case err == nil:
			t.credit(e, e.cg, st)
			t.counters.Unlisted++
		case schedstat.IsGone(err):
			t.retire(tid, e)
		default:
			// Not listed and not readable, but not proven gone either:
			// keep it with its last values, for a later read to catch up.
			t.readError(err)
			t.mark(e)
		}
	}
}

// retire drops a task whose handle reports it gone. What was counted for it
// stays counted; an exit record that arrives later adds only its final
// stretch.
func (t *Table) retire(tid int32, e *entry) {
	e.h.Close()
	delete(t.tasks, tid)
	t.counters.Exits++
	t.graves.bury(tid, e, t.clock())
}

func (t *Table) readError(err error) {
	t.counters.ReadErrors[ReasonOf(err)]++
}

// shrink rebuilds the task map when it once grew far beyond what it holds
// now, since a Go map keeps its largest size after deletes.
func (t *Table) shrink() {
	n := len(t.tasks)
	if t.peak <= 2*n+minRebuild {
		return
	}
	m := make(map[int32]*entry, n)
	for tid, e := range t.tasks {
		m[tid] = e
	}
	t.tasks = m
	t.peak = n
	t.counters.Rebuilds++
}

// Len returns the number of tasks tracked, each holding one open handle.
func (t *Table) Len() int { return len(t.tasks) }

// Close closes every handle the table holds. Pass fails after Close.
func (t *Table) Close() error {
	var errs []error
	for tid, e := range t.tasks {
		if err := e.h.Close(); err != nil {
			errs = append(errs, err)
		}
		delete(t.tasks, tid)
	}
	t.closed = true
	return errors.Join(errs...)
}

// monotonicNow reads CLOCK_MONOTONIC, the clock bpf_ktime_get_ns reads.
func monotonicNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
