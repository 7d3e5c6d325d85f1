package container

import (
	"cmp"
	"errors"
	"slices"

	"github.com/schedstatd/schedstatd/schedstat"
)

// A table restored from a State continues every series from its saved
// values. Until its first complete pass it also holds what the State said
// of the tasks and of the cgroups' counters then:
//
//   - a saved task that the first pass finds alive with the same identity
//     goes on from its saved counters, so the time it ran while the daemon
//     was down counts once, in the cgroup that lists it now;
//   - an exit record delivered before the first pass for a saved task
//     counts only its increase over the saved counters;
//   - the run time of tasks that exited while no daemon watched (and of
//     those the last daemon saw after its last write) is known only to
//     the cgroups' own CPU counters: the first pass adds, to each cgroup
//     below the root read whole then and at the save, its counter's
//     increase since the save less what the pass credited in it, and no
//     more than every ancestor's own such gap allows, so a thread that
//     moved between cgroups is never counted twice. Runqueue wait and
//     timeslices of those tasks are lost, unless their exit records come
//     after that pass: an exit source at sched_process_free writes a
//     task's record up to ExitRecordDelay after its exit, so a task the
//     last daemon saw reaped may be freed once this one has loaded. Such
//     a record adds its wait and timeslices but not its run, which the
//     fill has: a saved task's increase over its saved counters, any
//     other task's life up to the read of its cgroup's counter if it
//     started no later than the clock tick by which that pass had read
//     the counters (not listed, so it had exited, or it ran in part before
//     the read). Only a task that started in a later tick counts whole:
//     one that started in that very tick after the read loses its run
//     rather than maybe counting it twice.
//
// A pass reads a cgroup's counter and its tasks' counters one after the
// other, not at one instant. The BPF sources read the tasks first: the
// save has each counter read after the tasks', and the first pass of the
// restored table reads the counters before the tasks' (RestoreLister), so
// a gap is never more than the unseen tasks ran, and is less by what the
// cgroup's tasks ran between the reads (milliseconds of a busy cgroup's
// time on a loaded machine). The procfs source reads the counter first in
// every pass, and its gap may exceed by what the cgroup's tasks ran
// between the two reads at the save.

// restoredTask is a saved task not yet found by a pass.
type restoredTask struct {
	start uint64
	last  schedstat.Stat
	cg    *cgroupState
}

// restoredCgroup is a cgroup's own run time and kernel counter at the save.
type restoredCgroup struct {
	run      uint64
	usage    uint64
	hasUsage bool
}

type restoreState struct {
	root    *cgroupState
	tasks   map[int32]restoredTask
	retired map[identity]restoredTask
	cgroups map[*cgroupState]restoredCgroup
	// countersReadBy is the boot clock, in clock ticks, by which the
	// pass now running had read the cgroups' counters.
	countersReadBy uint64
}

// RestoreStats says what a restore brought back, for self metrics and the
// log. It is complete once Done is set, after the first complete pass.
type RestoreStats struct {
	// Restored reports that the table was restored from a State.
	Restored bool
	// Done reports that the first complete pass since has run.
	Done bool
	// Cgroups and Tasks are what the State held; CgroupsGone those the
	// first pass found removed (folded into their nearest ancestor).
	Cgroups, Tasks, CgroupsGone int
	// TasksResumed are saved tasks found alive with the same identity,
	// continuing from their saved counters; TasksExited saved tasks
	// whose exit records came before the first pass.
	TasksResumed, TasksExited int
	// FilledRunNanoseconds is the run time of tasks that exited unseen,
	// taken from the cgroups' own CPU counters.
	FilledRunNanoseconds uint64
	// TotalsContinued reports, for a table of per-cgroup totals, that its
	// source keeps its totals in the store the State was taken from: the
	// table goes on from what it had credited, and the source must not be
	// primed.
	TotalsContinued bool
	// LateExits are exit records that came after the first complete
	// pass for tasks that had exited before it, whose run that pass
	// filled: they added their wait and timeslices only. It may grow
	// after Done.
	LateExits int
}

// Restored returns what Restore brought back. It must be called from the
// goroutine that owns the table.
func (t *Table) Restored() RestoreStats { return t.restored }

// Restore loads s into a table that has not run a pass: every cgroup's
// totals and series offsets, the tombstones, and the saved tasks, which the
// first pass resumes (see above). A State that does not validate is
// refused whole and the table is left as it was. Like Pass, Restore must
// be called from the goroutine that owns the table.
func (t *Table) Restore(s State) error {
	if t.pass != 0 || t.restore != nil || t.closed || len(t.cgroups.byID) != 0 {
		return errors.New("container: Restore must come before the first pass")
	}
	if err := s.Validate(); err != nil {
		return err
	}
	set := newCgroupSet()
	cgs := make([]*cgroupState, len(s.Cgroups))
	rs := &restoreState{
		tasks:   make(map[int32]restoredTask, len(s.Tasks)),
		cgroups: make(map[*cgroupState]restoredCgroup, len(s.Cgroups)),
	}
	for i, c := range s.Cgroups {
		cg := &cgroupState{
			id: c.ID, path: c.Path, own: c.Own, base: c.Base, total: c.Own,
			kernel:  loadKernel(&c.Kernel),
			readRun: c.Own.RunNanoseconds - min(c.LateRun, c.Own.RunNanoseconds),
		}
		if c.Parent >= 0 {
			cg.parent = cgs[c.Parent]
			cg.depth = cg.parent.depth + 1
		}
		cgs[i] = cg
		set.byID[c.ID] = cg
		if c.HoldsPath {
			set.byPath[c.Path] = cg
		}
		// The run at the counter's read: records fed after it credited
		// LateRun, which the counter shows only since.
		rs.cgroups[cg] = restoredCgroup{run: cg.readRun, usage: c.Kernel[0].Last, hasUsage: c.Kernel[0].Has}
	}
	// Totals as the last rollup had them: a path made again under a new
	// id, or removed, carries on from them.
	for i := len(cgs) - 1; i > 0; i-- {
		p := cgs[i].parent
		p.total = p.total.Add(cgs[i].total)
	}
	tombs := slices.Clone(s.Tombstones)
	slices.SortStableFunc(tombs, func(a, b TombstoneState) int { return cmp.Compare(a.RemovedAt, b.RemovedAt) })
	for _, ts := range tombs {
		set.tombs.put(ts.Path, tombstone{stat: ts.Stat, kernel: loadKernel(&ts.Kernel)}, ts.RemovedAt)
	}
	for _, x := range s.Tasks {
		rs.tasks[x.TID] = restoredTask{start: x.StartTime, last: x.Last, cg: cgs[x.Cgroup]}
	}
	rs.retired = make(map[identity]restoredTask, len(s.Retired))
	for _, x := range s.Retired {
		rs.retired[identity{x.TID, x.StartTime}] = restoredTask{start: x.StartTime, last: x.Last, cg: cgs[x.Cgroup]}
	}
	rs.root = cgs[0]
	t.cgroups = set
	t.restore = rs
	t.restored = RestoreStats{Restored: true, Cgroups: len(s.Cgroups), Tasks: len(s.Tasks)}
	t.restoreTotals(&s.Totals)
	return nil
}

// resume gives a task the first pass found the counters saved for it, if
// the State named the same task.
func (t *Table) resume(tid int32, e *entry) {
	if t.restore == nil {
		return
	}
	r, ok := t.restore.tasks[tid]
	if !ok || r.start != e.start {
		// Another task took the id: the saved one stays for finishRestore.
		return
	}
	delete(t.restore.tasks, tid)
	e.last = r.last
	t.restored.TasksResumed++
}

// exitBeforeFirstPass takes an exit record delivered before the first pass
// of a restored table: a saved task's final stretch goes to the cgroup it
// was credited to, any other record waits for the first pass.
func (t *Table) exitBeforeFirstPass(x Exit) {
	rs := t.restore
	if rs == nil {
		return
	}
	t.counters.ExitEvents++
	if r, ok := rs.tasks[x.TID]; ok && r.start == x.StartTime {
		delete(rs.tasks, x.TID)
		cg := r.cg.live()
		cg.own = cg.own.Add(x.Final.Since(r.last))
		t.restored.TasksExited++
		return
	}
	if r, ok := rs.retired[identity{x.TID, x.StartTime}]; ok {
		delete(rs.retired, identity{x.TID, x.StartTime})
		cg := r.cg.live()
		d := x.Final.Since(r.last)
		cg.own = cg.own.Add(d)
		cg.readRun += d.RunNanoseconds // gone by the save's read: in its counter
		t.restored.TasksExited++
		return
	}
	if len(t.pending.list) >= maxPending {
		rs.root.own = rs.root.own.Add(x.Final)
		t.counters.UnattributedExits++
		t.counters.PendingOverflows++
		return
	}
	t.pending.hold(t, x)
}

// finishRestore runs in the first pass of a restored table, after its tasks
// were read and before removed cgroups are folded: saved tasks the walk did
// not list are looked up by id, and the run time of tasks that exited
// unseen is filled from the cgroups' counters.
func (t *Table) finishRestore() {
	rs := t.restore
	for tid, r := range rs.tasks {
		if _, ok := t.tasks[tid]; ok {
			continue
		}
		h, err := t.opener.Open(tid)
		if err != nil {
			continue
		}
		st, err := h.Read()
		if err != nil || h.StartTime() != r.start {
			h.Close()
			continue
		}
		e := &entry{h: h, start: r.start, last: r.last}
		t.credit(e, r.cg, st)
		t.tasks[tid] = e
		t.peak = max(t.peak, len(t.tasks))
		t.counters.Unlisted++
		t.restored.TasksResumed++
	}
	t.fillGaps(rs)
	// Saved tasks that exited unseen: a record of one that comes later
	// adds what the fill does not have.
	now := t.clock()
	for tid, r := range rs.tasks {
		if e, ok := t.tasks[tid]; !ok || e.start != r.start {
			t.graves.put(tid, r.start, grave{last: r.last, cg: r.cg, restored: true, filled: t.gapFilled(r.cg)}, now)
		}
	}
	// Tasks the last daemon retired ended before the save: a late record
	// adds their last stretch, run included, which no counter filled.
	for id, r := range rs.retired {
		t.graves.put(id.tid, id.start, grave{last: r.last, cg: r.cg, restored: true}, now)
	}
	for cg := range rs.cgroups {
		if cg.seen != t.pass {
			t.restored.CgroupsGone++
		}
	}
	t.restore = nil
	t.restored.Done = true
}

// runFilled reports whether the run of x, a record for a task no pass saw,
// may be in what the first pass of a restored table filled: the task
// started no later than the clock tick by which that pass had read the
// cgroups' counters, and its cgroup's gap was filled. Only a task that
// started in a later tick ran wholly after the counters were read and
// counts whole.
func (t *Table) runFilled(x Exit) bool {
	if t.filledUpTo == 0 || x.StartTime > t.filledUpTo {
		return false
	}
	cg := t.cgroups.byID[x.Cgroup]
	return cg != nil && (cg.gapKnown || cg.folded != nil && cg.live().gapKnown)
}

// gapFilled reports whether the run of a task of cg that exited unseen is
// in a gap the first pass of a restored table filled: cg's own, or, for a
// cgroup removed since the save, that of its nearest listed ancestor,
// whose counter holds the removed one's time. It is called in that pass.
func (t *Table) gapFilled(cg *cgroupState) bool {
	for ; cg != nil; cg = cg.parent {
		if cg.seen == t.pass {
			return cg.gapKnown
		}
	}
	return false
}

// gapNode is one listed cgroup's run-time gap in fillGaps.
type gapNode struct {
	credited  int64 // run credited since the restore, in its subtree
	gap       int64 // counter increase less credited, in its subtree
	kidsGap   int64 // sum of the children's gaps
	known     bool  // its counter was read now and at the save
	kidsKnown bool  // every child's gap is known
	left      int64 // what it may still hand out
}

// fillGaps adds to each cgroup the run time its own CPU counter shows since
// the save and no task accounts for, bounded from the root down (see the
// comment at the top of this file).
func (t *Table) fillGaps(rs *restoreState) {
	set := &t.cgroups
	if len(set.order) == 0 {
		return
	}
	nodes := make(map[*cgroupState]*gapNode, len(set.order))
	for _, cg := range set.order {
		// A cgroup made since the save had nothing credited then.
		nodes[cg] = &gapNode{kidsKnown: true, credited: int64(cg.own.RunNanoseconds - rs.cgroups[cg].run)}
	}
	// What was credited in a cgroup removed since counts in its nearest
	// listed ancestor, whose counter holds the removed one's time.
	for cg, was := range rs.cgroups {
		if cg.seen == t.pass {
			continue
		}
		d := int64(cg.own.RunNanoseconds - was.run)
		if d == 0 {
			continue
		}
		anc := set.order[0]
		for p := cg.parent; p != nil; p = p.parent {
			if p.seen == t.pass && nodes[p] != nil {
				anc = p
				break
			}
		}
		nodes[anc].credited += d
	}
	for i := range t.listing.Cgroups {
		c := &t.listing.Cgroups[i]
		cg := set.index[i]
		if cg == nil || c.ID == 0 || cg.id != c.ID || !c.HasUsage || c.Err != nil || c.SubtreeUnread {
			continue
		}
		was, restored := rs.cgroups[cg]
		switch {
		case !restored:
			// Made since the save: its counter started at zero.
			nodes[cg].known = true
			nodes[cg].gap = int64(c.UsageNanoseconds)
		case was.hasUsage:
			nodes[cg].known = true
			if c.UsageNanoseconds >= was.usage {
				nodes[cg].gap = int64(c.UsageNanoseconds - was.usage)
			} else {
				nodes[cg].gap = int64(c.UsageNanoseconds) // reset to zero since
			}
		}
	}
	// Subtree credits, children before parents.
	for i := len(set.order) - 1; i > 0; i-- {
		cg := set.order[i]
		if p := cg.parent; p != nil && nodes[p] != nil {
			nodes[p].credited += nodes[cg].credited
		}
	}
	for i := len(set.order) - 1; i > 0; i-- {
		cg := set.order[i]
		n := nodes[cg]
		n.gap -= n.credited
		if p := cg.parent; p != nil && nodes[p] != nil {
			nodes[p].kidsGap += n.gap
			nodes[p].kidsKnown = nodes[p].kidsKnown && n.known
		}
	}
	root := nodes[set.order[0]]
	root.gap -= root.credited
	if !root.known {
		return
	}
	t.filledUpTo = rs.countersReadBy
	// The root's own gap is not filled: a v2 root's counter also holds
	// interrupt and steal time that no task ran.
	root.left = max(root.gap, 0)
	var filled int64
	for _, cg := range set.order[1:] {
		n, p := nodes[cg], nodes[cg.parent]
		if !n.known || p == nil {
			continue
		}
		n.left = min(max(n.gap, 0), p.left)
		p.left -= n.left
		if !n.kidsKnown {
			continue
		}
		cg.gapKnown = true
		f := min(max(n.gap-n.kidsGap, 0), n.left)
		if f > 0 {
			cg.own.RunNanoseconds += uint64(f)
			n.left -= f
			filled += f
		}
	}
	t.restored.FilledRunNanoseconds = uint64(filled)
}
