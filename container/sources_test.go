package container_test

import (
	"testing"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/taskiter"
)

// taskSource is one way to read real tasks: procfs, with a kept fd per
// task, or the BPF task iterator, with one read per pass. The real-task
// tests of the accounting run over both.
type taskSource struct {
	// opener reads the tasks.
	opener container.TaskOpener
	// wrap turns a test's own listing into one that feeds opener: the
	// iterator reads every task once per pass, as the listing starts.
	wrap func(cgroupfs.Lister) cgroupfs.Lister
	// lister is the source's own listing of a real hierarchy.
	lister cgroupfs.Lister
}

// forEachSource runs test over procfs and over the task iterator, each
// reading the real hierarchy named (cpuacct or unified; a v1 one skips, said,
// on a pure v2 machine).
func forEachSource(t *testing.T, hierarchy string, test func(t *testing.T, src taskSource)) {
	t.Run("procfs", func(t *testing.T) {
		e2e.RequireRoot(t)
		testcg.Require(t, hierarchy)
		h, err := cgroupfs.Open(testcg.Root, hierarchy)
		if err != nil {
			t.Fatal(err)
		}
		test(t, taskSource{
			opener: procsource.Opener{Root: "/proc", Budget: procsource.SharedBudget(4)},
			wrap:   func(l cgroupfs.Lister) cgroupfs.Lister { return l },
			lister: h,
		})
	})
	t.Run("iter", func(t *testing.T) {
		e2e.RequireRoot(t)
		testcg.Require(t, hierarchy)
		h, err := cgroupfs.Open(testcg.Root, hierarchy)
		if err != nil {
			t.Fatal(err)
		}
		src, err := taskiter.Open(taskiter.Options{Hierarchy: h})
		if err != nil {
			t.Fatalf("task iterator: %v", err)
		}
		t.Cleanup(func() { src.Close() })
		test(t, taskSource{
			opener: src.Opener(),
			wrap:   func(l cgroupfs.Lister) cgroupfs.Lister { return readFirst{src, l} },
			lister: src.Lister(),
		})
	})
}

// readFirst reads every task with the iterator, then lists with the
// test's own lister.
type readFirst struct {
	src  *taskiter.Source
	next cgroupfs.Lister
}

func (r readFirst) List(l *cgroupfs.Listing) error {
	if err := r.src.Read(); err != nil {
		return err
	}
	return r.next.List(l)
}
