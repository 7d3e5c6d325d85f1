package baseline

import (
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/schedstat"
)

// Handlers keeps one pruned PidMap per cgroup path, as cAdvisor keeps one
// handler per container. It is not safe for concurrent use.
type Handlers struct {
	read    ReadFunc
	subtree bool
	byPath  map[string]*handler
	pass    uint64
	pids    []int32
	// Totals holds, after Pass, each listed cgroup's totals in listing
	// order.
	Totals []schedstat.Stat
}

type handler struct {
	m    *PidMap
	last schedstat.Stat // totals of the last update that succeeded
	seen uint64
}

// NewPerLevel returns handlers of which each lists and reads the tasks of
// its cgroup's whole subtree, as cAdvisor's do: a task is read once for its
// own cgroup and once for every ancestor.
func NewPerLevel(read ReadFunc) *Handlers {
	return &Handlers{read: read, subtree: true, byPath: make(map[string]*handler)}
}

// NewFlat returns handlers of which each reads only its cgroup's own tasks,
// so each task is read once per pass.
func NewFlat(read ReadFunc) *Handlers {
	return &Handlers{read: read, byPath: make(map[string]*handler)}
}

// Pass updates the handler of every cgroup in l, making handlers for new
// cgroups and dropping those of cgroups l no longer lists. A handler whose
// update fails (a task gone between the listing and its read) keeps its
// last totals and the pass goes on with the next, as cAdvisor logs a
// container's failed housekeeping and goes on; the first error is
// returned.
func (h *Handlers) Pass(l *cgroupfs.Listing) error {
	h.pass++
	h.Totals = h.Totals[:0]
	var first error
	for i := range l.Cgroups {
		c := &l.Cgroups[i]
		hd := h.byPath[c.Path]
		if hd == nil {
			hd = &handler{m: NewPruned(h.read)}
			h.byPath[c.Path] = hd
		}
		hd.seen = h.pass
		pids := c.TIDs
		if h.subtree {
			pids = h.subtreeTIDs(l, i)
		}
		total, err := hd.m.Update(pids)
		if err != nil {
			total = hd.last
			if first == nil {
				first = err
			}
		}
		hd.last = total
		h.Totals = append(h.Totals, total)
	}
	for p, hd := range h.byPath {
		if hd.seen != h.pass {
			delete(h.byPath, p)
		}
	}
	return first
}

// subtreeTIDs returns the tasks of cgroup i and all its descendants, as
// listing a container's processes recursively gives them.
func (h *Handlers) subtreeTIDs(l *cgroupfs.Listing, i int) []int32 {
	h.pids = append(h.pids[:0], l.Cgroups[i].TIDs...)
	for j := i + 1; j < len(l.Cgroups); j++ {
		if descends(l, j, i) {
			h.pids = append(h.pids, l.Cgroups[j].TIDs...)
		}
	}
	return h.pids
}

// descends reports whether cgroup j is below cgroup i; parents precede
// their children in a listing.
func descends(l *cgroupfs.Listing, j, i int) bool {
	for p := l.Cgroups[j].Parent; p >= i; p = l.Cgroups[p].Parent {
		if p == i {
			return true
		}
	}
	return false
}

// Reads returns the reads of every handler now held.
func (h *Handlers) Reads() int {
	n := 0
	for _, hd := range h.byPath {
		n += hd.m.Reads
	}
	return n
}

// Len returns the ids stored across all handlers.
func (h *Handlers) Len() int {
	n := 0
	for _, hd := range h.byPath {
		n += hd.m.Len()
	}
	return n
}
