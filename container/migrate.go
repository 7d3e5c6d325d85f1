package container

import "github.com/schedstatd/schedstatd/schedstat"

// Migration is a task's move into another cgroup of the walked hierarchy,
// with its counters at that moment, as an exit source that sees moves
// delivers it (in the order the kernel wrote it among exit records).
type Migration struct {
	// TID and StartTime (clock ticks since boot) name the task.
	TID       int32
	StartTime uint64
	// At holds the task's counters at the move.
	At schedstat.Stat
	// From is the kernel id of the cgroup the task left, 0 when the
	// source cannot know it, and FromAncestors its ancestors, nearest
	// first.
	From          uint64
	FromAncestors [MaxExitAncestors]uint64
	// To is the kernel id of the cgroup the task joined, and
	// ToAncestors its ancestors, nearest first, zero past the last one.
	To          uint64
	ToAncestors [MaxExitAncestors]uint64
}

// Bounds of the moves of tasks no pass has seen yet.
const (
	// maxMoved bounds the tasks whose moves wait for a pass to see the
	// task or for its exit record; past it a move is not kept, and that
	// task counts as it would without it (all of its life where a pass
	// first lists it).
	maxMoved = 16384
	// movedTTL is how long, in nanoseconds, a move waits: between one and
	// two of these, in generations.
	movedTTL = int64(30e9)
	// maxMoveCredits bounds the stretches kept per task; later moves
	// merge their stretch into the last one (totals stay exact, only
	// which cgroup gets that stretch is approximate).
	maxMoveCredits = 4
)

// movedTask is what the moves of a task no pass has seen left to credit
// when the task is first seen or its exit record comes: each stretch of
// its life to the cgroup it ran in, by id as exit records are.
type movedTask struct {
	at      schedstat.Stat // counters at the last move
	to      uint64         // the cgroup joined at the last move
	toAnc   [MaxExitAncestors]uint64
	credits [maxMoveCredits]Exit
	n       int
}

// movedTasks holds movedTask by identity in two generations of movedTTL.
type movedTasks struct {
	cur, old map[identity]*movedTask
	begin    int64 // clock at which cur began
}

func (m *movedTasks) get(id identity) *movedTask {
	if mt := m.cur[id]; mt != nil {
		return mt
	}
	return m.old[id]
}

func (m *movedTasks) take(id identity) *movedTask {
	mt := m.get(id)
	if mt != nil {
		delete(m.cur, id)
		delete(m.old, id)
	}
	return mt
}

func (m *movedTasks) len() int { return len(m.cur) + len(m.old) }

// expire forgets the older generation once the current one is movedTTL
// old; each generation's map is made anew, so a burst gives memory back.
func (m *movedTasks) expire(now int64) (dropped int) {
	if now-m.begin < movedTTL {
		return 0
	}
	dropped = len(m.old)
	m.old, m.cur, m.begin = m.cur, nil, now
	return dropped
}

// Migrate takes a move record: for a tracked task, the increase up to the
// move goes to the cgroup it was credited to; for a task no pass has seen,
// its counters up to the move go to the cgroup it left (by id, as exit
// records: waiting while no pass has listed it, to the nearest listed
// ancestor if removed, to the root if never known) when a pass first sees
// it or its exit record comes, and only its increase since the move to
// where it is then. A record older than what a pass already read of the
// task changes nothing. Like Exit, Migrate must be called from the
// goroutine that owns the table, in the order records were written; before
// the first pass it does nothing.
func (t *Table) Migrate(m Migration) {
	if t.closed || t.pass == 0 {
		return
	}
	t.counters.Migrations++
	if e := t.tasks[m.TID]; e != nil && e.start == m.StartTime {
		if !covers(m.At, e.last) {
			t.counters.StaleMigrations++
			return
		}
		from := e.cg.live()
		if mt := t.moved.take(identity{m.TID, m.StartTime}); mt != nil {
			// It had moved into a cgroup no pass listed yet.
			t.creditByID(Exit{Cgroup: mt.to, Ancestors: mt.toAnc, Final: m.At.Since(e.last)})
		} else {
			from.own = from.own.Add(m.At.Since(e.last))
		}
		e.last = m.At
		if cg := t.cgroups.byID[m.To]; cg != nil && cg.seen == t.pass {
			e.cg = cg
		} else if t.moved.len() < maxMoved {
			// Its exit before the next pass goes there, by id.
			t.putMoved(identity{m.TID, m.StartTime}, &movedTask{at: m.At, to: m.To, toAnc: m.ToAncestors})
		}
		return
	}
	id := identity{m.TID, m.StartTime}
	if t.retiredKnown(id) {
		// A pass saw it: what it counted already covers the move.
		t.counters.StaleMigrations++
		return
	}
	mt := t.moved.get(id)
	if mt == nil {
		if t.moved.len() >= maxMoved {
			t.counters.MigrationOverflows++
			return
		}
		mt = &movedTask{}
		t.putMoved(id, mt)
		mt.push(Exit{Cgroup: m.From, Ancestors: m.FromAncestors, Final: m.At})
	} else {
		mt.push(Exit{Cgroup: mt.to, Ancestors: mt.toAnc, Final: m.At.Since(mt.at)})
	}
	mt.at, mt.to, mt.toAnc = m.At, m.To, m.ToAncestors
}

// putMoved keeps mt for the task id.
func (t *Table) putMoved(id identity, mt *movedTask) {
	if t.moved.cur == nil {
		t.moved.cur = make(map[identity]*movedTask)
	}
	t.moved.cur[id] = mt
}

// exitMoved takes the exit record x of the tracked task e, which moved
// into a cgroup no pass has listed yet since the last read: its final
// stretch goes there by id. It reports false if e did not.
func (t *Table) exitMoved(e *entry, x Exit) bool {
	if t.moved.len() == 0 {
		return false
	}
	mt := t.moved.take(identity{x.TID, x.StartTime})
	if mt == nil {
		return false
	}
	if mt.n != 0 || !covers(x.Final, e.last) {
		t.counters.StaleMigrations++
		return false
	}
	t.creditByID(Exit{Cgroup: mt.to, Ancestors: mt.toAnc, Final: x.Final.Since(e.last)})
	e.last = x.Final
	return true
}

// push adds one stretch, merging it into the last one past the bound.
func (mt *movedTask) push(x Exit) {
	if mt.n == maxMoveCredits {
		last := &mt.credits[mt.n-1]
		last.Final = last.Final.Add(x.Final)
		return
	}
	mt.credits[mt.n] = x
	mt.n++
}

// covers reports whether a is a reading of a task no earlier than b.
func covers(a, b schedstat.Stat) bool {
	return a.RunNanoseconds >= b.RunNanoseconds && a.WaitNanoseconds >= b.WaitNanoseconds && a.Timeslices >= b.Timeslices
}

// retiredKnown reports whether a pass retired the task id.
func (t *Table) retiredKnown(id identity) bool {
	for i := range t.graves.gens {
		if _, ok := t.graves.gens[i].graves[id]; ok {
			return true
		}
	}
	return false
}

// takeMoves credits the stretches before the last move of the task tid
// that started at start, if it moved before any pass saw it and its
// counters at that move lie between lo (what was counted for it already)
// and hi (its counters now), and returns those counters, which are what a
// pass or an exit record must count from. It reports false, crediting
// nothing, otherwise.
func (t *Table) takeMoves(tid int32, start uint64, lo, hi schedstat.Stat) (schedstat.Stat, bool) {
	if t.moved.len() == 0 {
		return schedstat.Stat{}, false
	}
	mt := t.moved.take(identity{tid, start})
	if mt == nil {
		return schedstat.Stat{}, false
	}
	if !covers(mt.at, lo) || !covers(hi, mt.at) {
		t.counters.StaleMigrations++
		return schedstat.Stat{}, false
	}
	for i := range mt.n {
		t.creditByID(mt.credits[i])
	}
	return mt.at, true
}

// creditByID credits x.Final to the cgroup x.Cgroup names, as an exit
// record of a task no pass saw is: at once if this pass lists it, else
// waiting for a pass (pendingExits); the root if no id is known.
func (t *Table) creditByID(x Exit) {
	if x.Cgroup == 0 {
		root := t.cgroups.order[0]
		root.own = root.own.Add(x.Final)
		t.counters.UnattributedMigrations++
		return
	}
	if cg := t.cgroups.byID[x.Cgroup]; cg != nil && cg.seen == t.pass {
		cg.own = cg.own.Add(x.Final)
		return
	}
	t.pending.hold(t, x)
}

// startFromMoves sets a newly seen task's last reading to its counters at
// its last move, after crediting what it ran before, so that the pass
// credits only its increase since the move. st is the pass's reading.
func (t *Table) startFromMoves(tid int32, e *entry, st schedstat.Stat) {
	if at, ok := t.takeMoves(tid, e.start, e.last, st); ok {
		e.last = at
	}
}
