package container

import (
	"cmp"
	"slices"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/schedstat"
)

// cgroupState is the accounting of one cgroup, known by its kernel id.
type cgroupState struct {
	id   uint64
	path string // label only; may change if a v1 cgroup is renamed
	// own is what was credited to this cgroup itself, plus the totals of
	// removed descendants folded into it. It only grows.
	own       schedstat.Stat
	tasks     int // own tasks read this pass
	lastTasks int // own tasks of the pass before

	// Set by each pass from the listing, or kept from the last pass that
	// listed the cgroup while a partial pass cannot see it.
	parent *cgroupState
	depth  int
	seen   uint64
	// kernel holds the kernel's own counters (CPU usage, bandwidth,
	// pressure), each made monotonic.
	kernel kernelCounters
	// base is what the series at this path showed before this cgroup
	// took the path over from a removed predecessor: the exported series
	// go on from it, while rollup and folding use own and total alone.
	base    schedstat.Stat
	errors  uint64 // passes that could not read this cgroup whole
	lastErr bool   // the last pass could not read it whole
	// subtreeUnread is set when this pass could not list the cgroup's
	// children, or kept the cgroup unseen: its descendants are kept too.
	subtreeUnread bool
	// gapKnown is set when the first pass of a restored table filled
	// this cgroup's own run-time gap (restore.go).
	gapKnown bool
	// readRun is own's run when the last pass that listed the cgroup
	// ended, plus what the exit records of tasks gone by then credited
	// since: the run its counter, read in that pass, holds. Whatever else
	// own gained since ran after the read (CgroupState's LateRun).
	readRun uint64

	// Computed by rollup: own and tasks plus those of all descendants.
	total      schedstat.Stat
	totalTasks int

	// folded is the ancestor that took over this cgroup's totals when it
	// was removed; nil while the cgroup exists.
	folded *cgroupState

	// stateIndex is the cgroup's index in the State being built, valid
	// while StateInto runs (state.go).
	stateIndex int
	stateGen   uint64
}

// live returns the cgroup that now holds cg's totals: cg itself, or the
// ancestor it was folded into after its removal.
func (cg *cgroupState) live() *cgroupState {
	for cg.folded != nil {
		cg = cg.folded
	}
	return cg
}

// exported returns the series' values: base plus the totals.
func (cg *cgroupState) exported() schedstat.Stat { return cg.base.Add(cg.total) }

// cgroupSet holds the state of every cgroup the last pass listed or kept,
// keyed by kernel id, and the order of the current pass.
type cgroupSet struct {
	byID map[uint64]*cgroupState
	// byPath names the cgroup that holds each path now, so that a
	// cgroup made again under a removed one's name continues its series.
	byPath map[string]*cgroupState
	// index maps each listing entry to its state; order holds the states
	// of this pass, each parent before its children.
	index, order []*cgroupState
	kept         []*cgroupState // scratch for end
	tombs        tombstones
	removed      int // deletes from byID since it was made

	// Set by end: how many of the pass's cgroups were read whole.
	read, unread int
}

func newCgroupSet() cgroupSet {
	return cgroupSet{byID: make(map[uint64]*cgroupState), byPath: make(map[string]*cgroupState)}
}

// begin matches the listing's cgroups to their states by kernel id,
// creating states for new ids, and returns them in listing order. An entry
// without an id (its directory could not be examined) is matched by path
// to the state that last held it, if any, and otherwise to its parent.
func (s *cgroupSet) begin(pass uint64, l *cgroupfs.Listing) []*cgroupState {
	s.index, s.order = s.index[:0], s.order[:0]
	s.read, s.unread = 0, 0
	for i := range l.Cgroups {
		c := &l.Cgroups[i]
		var parent *cgroupState
		if c.Parent >= 0 && c.Parent < i {
			parent = s.index[c.Parent]
		}
		cg := s.match(c, pass)
		if cg == nil {
			// Unknown and unreadable: there is nothing to keep and no
			// thread to credit; its parent stands in.
			s.index = append(s.index, parent)
			s.unread++
			continue
		}
		if cg.seen == pass {
			// Listed twice (an id-less entry matched a state listed by
			// id): the first entry stands.
			s.index = append(s.index, cg)
			continue
		}
		cg.seen = pass
		cg.lastTasks, cg.tasks = cg.tasks, 0
		cg.subtreeUnread = c.SubtreeUnread
		if c.ID != 0 {
			cg.parent = parent
			cg.kernel.observe(c)
		}
		if cg.parent != nil {
			cg.depth = cg.parent.depth + 1
		}
		cg.lastErr = c.Err != nil
		if c.Err != nil {
			cg.errors++
			s.unread++
		} else {
			s.read++
		}
		s.index = append(s.index, cg)
		s.order = append(s.order, cg)
	}
	return s.index
}

// match returns the state of the listed cgroup c, making one for a new id.
func (s *cgroupSet) match(c *cgroupfs.Cgroup, pass uint64) *cgroupState {
	if c.ID == 0 {
		return s.byPath[c.Path]
	}
	cg := s.byID[c.ID]
	if cg == nil {
		cg = &cgroupState{id: c.ID}
		s.byID[c.ID] = cg
	}
	if cg.path == c.Path {
		return cg
	}
	if cg.path != "" && s.byPath[cg.path] == cg {
		delete(s.byPath, cg.path) // renamed (v1 allows it)
	}
	cg.path = c.Path
	if prev := s.byPath[c.Path]; prev != nil && prev != cg {
		// The path's last holder was removed and the path made again
		// since: the series goes on from where its predecessor left it.
		cg.inherit(prev.exported(), &prev.kernel)
	} else if t, ok := s.tombs.take(c.Path); ok {
		cg.inherit(t.stat, &t.kernel)
	}
	s.byPath[c.Path] = cg
	return cg
}

// inherit starts cg's series at the values a predecessor's series showed.
func (cg *cgroupState) inherit(st schedstat.Stat, kernel *kernelCounters) {
	cg.base = st
	cg.kernel.inherit(kernel)
}

// end keeps the cgroups that a partial pass could not see below an unread
// subtree, folds the other cgroups the pass did not list into their nearest
// ancestors that still exist, and rolls the totals up the tree. now is the
// pass's time, for forgetting old tombstones.
func (s *cgroupSet) end(pass uint64, now int64) {
	s.kept = s.kept[:0]
	for _, cg := range s.byID {
		if cg.seen == pass {
			continue
		}
		if s.unreadAbove(cg, pass) {
			cg.seen, cg.subtreeUnread = pass, true // tasks: as last listed
			s.kept = append(s.kept, cg)
		}
	}
	for id, cg := range s.byID {
		if cg.seen == pass {
			continue
		}
		anc := s.nearest(cg, pass)
		anc.own = anc.own.Add(cg.own)
		if s.byPath[cg.path] == cg {
			delete(s.byPath, cg.path)
			s.tombs.put(cg.path, tombstone{stat: cg.exported(), kernel: cg.kernel}, now)
		}
		cg.own = schedstat.Stat{}
		cg.folded = anc
		delete(s.byID, id)
		s.removed++
	}
	if len(s.kept) > 0 {
		// Parents before children, as rollup needs.
		slices.SortFunc(s.kept, func(a, b *cgroupState) int { return cmp.Compare(a.depth, b.depth) })
		s.order = append(s.order, s.kept...)
		s.unread += len(s.kept)
		clear(s.kept)
	}
	if s.removed > len(s.byID)+minRebuild {
		s.byID = rebuild(s.byID)
		s.byPath = rebuild(s.byPath)
		s.removed = 0
	}
	s.tombs.expire(now)
	s.rollup()
}

func rebuild[K comparable](m map[K]*cgroupState) map[K]*cgroupState {
	n := make(map[K]*cgroupState, len(m))
	for k, v := range m {
		n[k] = v
	}
	return n
}

// unreadAbove reports whether some ancestor of cg, as the pass that last
// listed cg knew them, is in this pass with its subtree unread (or is
// itself kept for that reason): cg may exist still, unseen.
func (s *cgroupSet) unreadAbove(cg *cgroupState, pass uint64) bool {
	for p := cg.parent; p != nil; p = p.parent {
		if p.seen == pass {
			return p.subtreeUnread
		}
	}
	return false
}

// nearest returns the closest ancestor of cg that this pass listed or kept,
// or the root of the listing.
func (s *cgroupSet) nearest(cg *cgroupState, pass uint64) *cgroupState {
	for p := cg.parent; p != nil; p = p.parent {
		if p.seen == pass && p.folded == nil {
			return p
		}
	}
	return s.order[0]
}

// rollup sets every cgroup's totals to its own plus its descendants'. A
// parent precedes its children in the order, so walking it backwards
// finishes each child before adding it to its parent.
func (s *cgroupSet) rollup() {
	for _, cg := range s.order {
		if cg.lastErr && cg.tasks == 0 {
			// Its thread list may be what failed: its tasks were read
			// through their handles, and are as many as before.
			cg.tasks = cg.lastTasks
		}
		cg.total, cg.totalTasks = cg.own, cg.tasks
	}
	for i := len(s.order) - 1; i > 0; i-- {
		cg := s.order[i]
		if p := cg.parent; p != nil {
			p.total = p.total.Add(cg.total)
			p.totalTasks += cg.totalTasks
		}
	}
}
