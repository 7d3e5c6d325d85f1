package taskiter_test

import (
	"slices"
	"testing"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// TestListCountersReal: ListCounters, which the first pass of a restored
// table runs before List, lists the same cgroup as List, with its counter
// and without its threads, and the counter it read is no later than
// List's.
func TestListCountersReal(t *testing.T) {
	for _, name := range hierarchies {
		t.Run(name, func(t *testing.T) {
			h, s := open(t, name)
			dir := testcg.Make(t, name)
			p := testproc.StartIn(t, 1, dir)
			path := rel(t, h, dir)
			l := s.Lister()
			var early, listed cgroupfs.Listing
			if err := l.ListCounters(&early); err != nil {
				t.Fatal(err)
			}
			if err := l.List(&listed); err != nil {
				t.Fatal(err)
			}
			find := func(l *cgroupfs.Listing) *cgroupfs.Cgroup {
				t.Helper()
				for i := range l.Cgroups {
					if l.Cgroups[i].Path == path {
						return &l.Cgroups[i]
					}
				}
				t.Fatalf("%s not listed", path)
				return nil
			}
			e, c := find(&early), find(&listed)
			if e.ID == 0 || e.ID != c.ID {
				t.Errorf("ListCounters gave %s id %d, List %d", path, e.ID, c.ID)
			}
			if len(e.TIDs) != 0 {
				t.Errorf("ListCounters listed threads %v: it reads no task", e.TIDs)
			}
			if !slices.Contains(c.TIDs, p.Workers[0]) {
				t.Errorf("List did not list the busy thread %d in %s: %v", p.Workers[0], path, c.TIDs)
			}
			if !e.HasUsage || !c.HasUsage || e.UsageNanoseconds > c.UsageNanoseconds {
				t.Errorf("counter %d (read %v) by ListCounters, %d (read %v) by List after it", e.UsageNanoseconds, e.HasUsage, c.UsageNanoseconds, c.HasUsage)
			}
		})
	}
}
