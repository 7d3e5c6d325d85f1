package taskiter

import (
	"fmt"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
)

// Lister lists the walked hierarchy with the threads of each cgroup taken
// from one read of the iterator: it runs Source.Read, walks the
// hierarchy's tree and counters with cgroupfs (Hierarchy.ListTree, which
// reads no thread lists), and files every live task under the cgroup whose
// ID is the task's cgroup id. A Lister belongs to the goroutine that owns
// the table.
type Lister struct {
	s    *Source
	byID map[uint64]int32 // cgroup id -> index in the listing, this pass
}

var _ container.RestoreLister = (*Lister)(nil)

// Lister returns a Lister over the hierarchy s was opened for.
func (s *Source) Lister() *Lister {
	return &Lister{s: s, byID: make(map[uint64]int32)}
}

// List implements cgroupfs.Lister. An error reading the iterator or the
// hierarchy's root is returned and l is then empty.
func (l *Lister) List(out *cgroupfs.Listing) error {
	out.Reset()
	if err := l.s.Read(); err != nil {
		return err
	}
	if err := l.s.hier.ListTree(out); err != nil {
		return fmt.Errorf("taskiter: %w", err)
	}
	clear(l.byID)
	for i := range out.Cgroups {
		if id := out.Cgroups[i].ID; id != 0 {
			l.byID[id] = int32(i)
		}
	}
	var unresolved uint64
	for i := range l.s.recs {
		r := &l.s.recs[i]
		if r.zombie {
			// Cgroup files list no zombies either; the table reads them
			// as unlisted tasks, whose counters are final.
			continue
		}
		c, ok := l.byID[r.cgroup]
		if !ok {
			unresolved++
			continue
		}
		cg := &out.Cgroups[c]
		cg.TIDs = append(cg.TIDs, r.tid)
	}
	l.s.unresolved.Add(unresolved)
	return nil
}

// ListCounters implements container.RestoreLister: the hierarchy's tree and
// counters alone, with no read of the tasks.
func (l *Lister) ListCounters(out *cgroupfs.Listing) error {
	if err := l.s.hier.ListTree(out); err != nil {
		return fmt.Errorf("taskiter: %w", err)
	}
	return nil
}
