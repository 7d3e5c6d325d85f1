package container

import "github.com/schedstatd/schedstatd/schedstat"

// Exit is a task's final counters, delivered by an exit source at the moment
// the task exits.
type Exit struct {
	// TID and StartTime (clock ticks since boot) name the task.
	TID       int32
	StartTime uint64
	// Final holds the task's counters at exit.
	Final schedstat.Stat
	// Cgroup is the task's cgroup path relative to the walked hierarchy, as
	// in cgroupfs.Cgroup.Path, or "" if unknown. It is used only for a task
	// no pass has seen.
	Cgroup string
}

// TrackExits prepares the table for an exit source: from now on, tasks a
// pass retires are remembered for two passes so that their exit records add
// only the final stretch. Call it once, before the first pass, when an exit
// source will call Exit.
func (t *Table) TrackExits() { t.graves.enabled = true }

// Exit folds a task's final counters into the totals, exactly once: for a
// tracked task only the increase over its last read is added and the task
// is retired; for a task a recent pass retired, only the increase over what
// that pass counted; for a task no pass saw, all of it, credited to
// x.Cgroup or, if that cgroup is unknown or gone, to its nearest ancestor
// that exists. Like Pass, it must be called from the goroutine that owns the
// table. Exit does nothing before the first pass.
func (t *Table) Exit(x Exit) {
	if t.pass == 0 || t.closed {
		return
	}
	t.counters.ExitEvents++
	if e := t.tasks[x.TID]; e != nil && e.start == x.StartTime {
		t.credit(e, e.cg, x.Final)
		e.h.Close()
		delete(t.tasks, x.TID)
		t.counters.Exits++
		return
	}
	if g, ok := t.graves.dig(x.TID, x.StartTime); ok {
		cg := g.cg.live()
		cg.own = cg.own.Add(x.Final.Since(g.last))
		return
	}
	cg, exact := t.cgroups.resolve(x.Cgroup, t.pass)
	if !exact {
		t.counters.UnattributedExits++
	}
	cg.own = cg.own.Add(x.Final)
}

// resolve returns the state of path if the last pass listed it, else its
// nearest listed ancestor, and whether it was path itself.
func (s *cgroupSet) resolve(path string, pass uint64) (*cgroupState, bool) {
	if cg := s.byPath[path]; cg != nil && cg.seen == pass {
		return cg, true
	}
	return s.nearest(path, pass), false
}

// identity names a task: its id and start time.
type identity struct {
	tid   int32
	start uint64
}

// grave is what was counted for a retired task.
type grave struct {
	last schedstat.Stat
	cg   *cgroupState
}

// graveyard remembers the tasks retired in the current and the previous
// pass, so that an exit record arriving after the pass that found its task
// gone adds only the final stretch. Two generations bound it by the exits
// of two passes; each generation map is rebuilt rather than cleared so it
// gives its memory back after a burst of exits.
type graveyard struct {
	enabled   bool
	cur, prev map[identity]grave
}

func (g *graveyard) bury(tid int32, e *entry) {
	if !g.enabled {
		return
	}
	if g.cur == nil {
		g.cur = make(map[identity]grave)
	}
	g.cur[identity{tid, e.start}] = grave{last: e.last, cg: e.cg}
}

func (g *graveyard) dig(tid int32, start uint64) (grave, bool) {
	id := identity{tid, start}
	for _, m := range [2]map[identity]grave{g.cur, g.prev} {
		if gr, ok := m[id]; ok {
			delete(m, id)
			return gr, true
		}
	}
	return grave{}, false
}

// rotate starts a new generation; the oldest is forgotten.
func (g *graveyard) rotate() {
	g.prev, g.cur = g.cur, nil
}
