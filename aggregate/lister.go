package aggregate

import (
	"fmt"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
)

// Lister lists the walked hierarchy for a table of totals: it runs
// Source.Read first, so that every cgroup the totals name existed when the
// walk began, then walks the hierarchy's tree and counters with cgroupfs
// (Hierarchy.ListTree, which reads no thread lists).
type Lister struct{ s *Source }

var _ container.RestoreLister = Lister{}

// Lister returns a Lister over the hierarchy s was opened for.
func (s *Source) Lister() Lister { return Lister{s} }

// List implements cgroupfs.Lister.
func (l Lister) List(out *cgroupfs.Listing) error {
	out.Reset()
	if err := l.s.Read(); err != nil {
		return err
	}
	if err := l.s.hier.ListTree(out); err != nil {
		return fmt.Errorf("aggregate: %w", err)
	}
	return nil
}

// ListCounters implements container.RestoreLister: the hierarchy's tree and
// counters alone, with no read of the tasks.
func (l Lister) ListCounters(out *cgroupfs.Listing) error {
	if err := l.s.hier.ListTree(out); err != nil {
		return fmt.Errorf("aggregate: %w", err)
	}
	return nil
}
