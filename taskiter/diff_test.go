package taskiter_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/schedstat"
)

// task is what a source says of one task.
type task struct {
	Start uint64
	Stat  schedstat.Stat
}

// TestDifferentialReal reads stopped helper threads through the iterator
// and through procfs: every thread is there with the same start time and
// the same counters, and each test cgroup lists the same threads.
func TestDifferentialReal(t *testing.T) {
	for _, name := range hierarchies {
		t.Run(name, func(t *testing.T) {
			h, s := open(t, name)
			dirs := []string{testcg.Make(t, name), testcg.Make(t, name)}
			var procs []*testproc.Proc
			for _, d := range dirs {
				procs = append(procs, testproc.StartIn(t, 3, d))
			}
			time.Sleep(30 * time.Millisecond)
			for _, p := range procs {
				p.Stop(t)
			}

			var tids []int32
			for _, p := range procs {
				tids = append(tids, p.Threads(t)...)
			}
			fromProc := map[int32]task{}
			for _, tid := range tids {
				pt, err := procsource.Open("/proc", tid)
				if err != nil {
					t.Fatal(err)
				}
				st, err := pt.Read()
				if err != nil {
					t.Fatal(err)
				}
				fromProc[tid] = task{pt.StartTime(), st}
				pt.Close()
			}

			var iterListing, procListing cgroupfs.Listing
			if err := s.Lister().List(&iterListing); err != nil {
				t.Fatal(err)
			}
			if err := h.List(&procListing); err != nil {
				t.Fatal(err)
			}
			fromIter := map[int32]task{}
			op := s.Opener()
			for _, tid := range tids {
				th, err := op.Open(tid)
				if err != nil {
					t.Fatalf("task %d: %v", tid, err)
				}
				st, err := th.Read()
				if err != nil {
					t.Fatalf("task %d: %v", tid, err)
				}
				fromIter[tid] = task{th.StartTime(), st}
			}
			if diff := cmp.Diff(fromProc, fromIter); diff != "" {
				t.Errorf("tasks (-procfs +iterator):\n%s", diff)
			}
			for _, d := range dirs {
				p := rel(t, h, d)
				want, got := threadsOf(&procListing, p), threadsOf(&iterListing, p)
				if len(want) == 0 {
					t.Errorf("%s: no threads listed through cgroupfs", p)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s threads (-cgroupfs +iterator):\n%s", p, diff)
				}
			}
			t.Logf("%d threads agree; the iterator saw %d tasks on the node", len(tids), s.Tasks())
		})
	}
}

// threadsOf returns the sorted own threads of the cgroup at path in l.
func threadsOf(l *cgroupfs.Listing, path string) []int32 {
	for _, c := range l.Cgroups {
		if c.Path == path {
			tids := slices.Clone(c.TIDs)
			slices.Sort(tids)
			return tids
		}
	}
	return nil
}

// TestTableTotalsReal runs one table over the iterator and one over
// cgroupfs and procfs, on a stopped workload in a cgroup and its child:
// the per-cgroup totals are the same.
func TestTableTotalsReal(t *testing.T) {
	for _, name := range hierarchies {
		t.Run(name, func(t *testing.T) {
			h, s := open(t, name)
			dir := testcg.Make(t, name)
			child := filepath.Join(dir, "child")
			if err := os.Mkdir(child, 0o755); err != nil {
				t.Fatal(err)
			}
			a := testproc.StartIn(t, 2, dir)
			b := testproc.StartIn(t, 2, child)
			time.Sleep(40 * time.Millisecond)
			a.Stop(t)
			b.Stop(t)

			iter := container.NewTable(s.Lister(), s.Opener())
			proc := container.NewTable(h, procsource.Opener{Root: "/proc", Budget: procsource.SharedBudget(4)})
			defer iter.Close()
			defer proc.Close()
			for range 2 {
				if err := iter.Pass(); err != nil {
					t.Fatal(err)
				}
				if err := proc.Pass(); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range []string{rel(t, h, dir), rel(t, h, child)} {
				want, ok1 := proc.Snapshot().Lookup(p)
				got, ok2 := iter.Snapshot().Lookup(p)
				if !ok1 || !ok2 {
					t.Fatalf("%s: listed by procfs table %v, by iterator table %v", p, ok1, ok2)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s (-procfs +iterator):\n%s", p, diff)
				}
				t.Logf("%s: %+v", p, got.Stat)
			}
			top, _ := iter.Snapshot().Lookup(rel(t, h, dir))
			// The helpers ran a little before they joined the cgroup, so
			// the counter is a reference to log, not to compare with.
			t.Logf("%s: own CPU counter %d ns, tasks counted %d ns", dir, testcg.Usage(t, dir), top.Stat.RunNanoseconds)
			if c := iter.Counters(); c.ReadErrors != (proc.Counters().ReadErrors) {
				t.Errorf("read errors: iterator %v, procfs %v", c.ReadErrors, proc.Counters().ReadErrors)
			}
		})
	}
}
