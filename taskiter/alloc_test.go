package taskiter_test

import (
	"testing"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// TestSteadyStateAllocs pins the per-task cost of a pass at zero
// allocations: one read of the iterator over a node with a thousand more
// threads, and a read of each through its handle. The walk of the
// hierarchy allocates per cgroup, not per task: its allocations do not
// grow with the threads.
func TestSteadyStateAllocs(t *testing.T) {
	_, s := open(t, "")
	p := testproc.StartSleepers(t, sleepers())
	if err := s.Read(); err != nil {
		t.Fatal(err)
	}
	hs := make([]container.TaskHandle, len(p.Workers))
	for i, tid := range p.Workers {
		h, err := s.Opener().Open(tid)
		if err != nil {
			t.Fatal(err)
		}
		hs[i] = h
	}
	var failed error
	allocs := testing.AllocsPerRun(20, func() {
		if err := s.Read(); err != nil {
			failed = err
		}
		for _, h := range hs {
			if _, err := h.Read(); err != nil {
				failed = err
			}
		}
	})
	if failed != nil {
		t.Fatal(failed)
	}
	if allocs != 0 {
		t.Errorf("a read and %d handle reads: %v allocations, want 0", len(hs), allocs)
	}

	l := s.Lister()
	var listing cgroupfs.Listing
	list := func() {
		if err := l.List(&listing); err != nil {
			failed = err
		}
	}
	list()
	few := testing.AllocsPerRun(10, list)
	more := testproc.StartSleepers(t, sleepers())
	list()
	many := testing.AllocsPerRun(10, list)
	if failed != nil {
		t.Fatal(failed)
	}
	t.Logf("List: %v allocations with %d cgroups, %v with %d more threads", few, len(listing.Cgroups), many, len(more.Workers))
	if many > few+2 {
		t.Errorf("List allocations grew from %v to %v with %d more threads", few, many, len(more.Workers))
	}
}

// sleepers is how many threads the allocation tests add: a thousand, a
// quarter of that with -short (the kernel matrix's VMs, under software
// emulation), still far more than a pass's fixed allocations.
func sleepers() int {
	if testing.Short() {
		return 250
	}
	return 1000
}
