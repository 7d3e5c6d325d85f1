package container

import (
	"strings"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/schedstat"
)

// cgroupState is the accounting of one cgroup path.
type cgroupState struct {
	path string
	// own is what was credited to this cgroup itself, plus the totals of
	// removed descendants folded into it. It only grows.
	own   schedstat.Stat
	tasks int // own tasks read this pass

	// Set by each pass from the listing.
	parent   *cgroupState
	seen     uint64
	usage    uint64
	hasUsage bool

	// Computed by rollup: own and tasks plus those of all descendants.
	total      schedstat.Stat
	totalTasks int

	// folded is the ancestor that took over this cgroup's totals when it
	// was removed; nil while the cgroup exists.
	folded *cgroupState
}

// live returns the cgroup that now holds cg's totals: cg itself, or the
// ancestor it was folded into after its removal.
func (cg *cgroupState) live() *cgroupState {
	for cg.folded != nil {
		cg = cg.folded
	}
	return cg
}

// cgroupSet holds the state of every cgroup seen in the last pass, keyed by
// path, and the order of the current listing.
type cgroupSet struct {
	byPath  map[string]*cgroupState
	order   []*cgroupState
	removed int // deletes from byPath since it was made
}

func newCgroupSet() cgroupSet {
	return cgroupSet{byPath: make(map[string]*cgroupState)}
}

// begin matches the listing's cgroups to their states, creating states for
// new paths, and returns them in listing order.
func (s *cgroupSet) begin(pass uint64, l *cgroupfs.Listing) []*cgroupState {
	s.order = s.order[:0]
	for i := range l.Cgroups {
		c := &l.Cgroups[i]
		cg := s.byPath[c.Path]
		if cg == nil {
			cg = &cgroupState{path: c.Path}
			s.byPath[c.Path] = cg
		}
		cg.seen = pass
		cg.tasks = 0
		cg.usage, cg.hasUsage = c.UsageNanoseconds, c.HasUsage
		cg.parent = nil
		if c.Parent >= 0 && c.Parent < i {
			cg.parent = s.order[c.Parent]
		}
		s.order = append(s.order, cg)
	}
	return s.order
}

// end folds the cgroups the pass did not list into their nearest listed
// ancestors and rolls the totals up the tree.
func (s *cgroupSet) end(pass uint64) {
	for path, cg := range s.byPath {
		if cg.seen == pass {
			continue
		}
		anc := s.nearest(path, pass)
		anc.own = anc.own.Add(cg.own)
		cg.own = schedstat.Stat{}
		cg.folded = anc
		delete(s.byPath, path)
		s.removed++
	}
	if s.removed > len(s.byPath)+minRebuild {
		m := make(map[string]*cgroupState, len(s.byPath))
		for p, cg := range s.byPath {
			m[p] = cg
		}
		s.byPath, s.removed = m, 0
	}
	s.rollup()
}

// nearest returns the closest ancestor of path listed in this pass, or the
// root of the listing.
func (s *cgroupSet) nearest(path string, pass uint64) *cgroupState {
	for path != "/" && path != "" {
		i := strings.LastIndexByte(path, '/')
		if i <= 0 {
			path = "/"
		} else {
			path = path[:i]
		}
		if cg := s.byPath[path]; cg != nil && cg.seen == pass {
			return cg
		}
	}
	return s.order[0]
}

// rollup sets every cgroup's totals to its own plus its descendants'. A
// parent precedes its children in the listing, so walking it backwards
// finishes each child before adding it to its parent.
func (s *cgroupSet) rollup() {
	for _, cg := range s.order {
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
