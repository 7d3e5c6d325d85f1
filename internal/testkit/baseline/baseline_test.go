package baseline_test

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/testkit/baseline"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// fakeProc is a ReadFunc over a map of live ids.
type fakeProc map[int32]schedstat.Stat

func (f fakeProc) read(pid int32) (schedstat.Stat, error) {
	st, ok := f[pid]
	if !ok {
		return schedstat.Stat{}, unix.ENOENT
	}
	return st, nil
}

func run(ns uint64) schedstat.Stat { return schedstat.Stat{RunNanoseconds: ns} }

func TestReadersAgreeWithParse(t *testing.T) {
	tid := unix.Gettid()
	path := "/proc/" + strconv.Itoa(tid) + "/schedstat"
	st, err := baseline.ReadFile("/proc")(int32(tid))
	if err != nil {
		t.Fatal(err)
	}
	if st.Timeslices == 0 {
		t.Errorf("ReadFile of this thread = %+v", st)
	}
	st2, err := baseline.OpenReadClose(path, make([]byte, 1024))
	if err != nil {
		t.Fatal(err)
	}
	if st2.RunNanoseconds < st.RunNanoseconds {
		t.Errorf("OpenReadClose read %+v after ReadFile read %+v", st2, st)
	}
	if _, err := baseline.ReadFile("/proc")(1 << 30); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile of a missing task: %v, want ErrNotExist", err)
	}
}

func TestUnprunedGrowsWithEveryID(t *testing.T) {
	proc := fakeProc{}
	m := baseline.NewUnpruned(proc.read)
	const live, passes = 10, 50
	next := int32(1)
	for range passes {
		clear(proc)
		var pids []int32
		for range live {
			proc[next] = run(1)
			pids = append(pids, next)
			next++
		}
		if _, err := m.Update(pids); err != nil {
			t.Fatal(err)
		}
	}
	if m.Len() != live*passes {
		t.Errorf("unpruned map holds %d ids, want every id ever read (%d)", m.Len(), live*passes)
	}
}

func TestPrunedKeepsLiveIDsAndLosesTimeOnReuse(t *testing.T) {
	proc := fakeProc{1: run(100), 2: run(200)}
	m := baseline.NewPruned(proc.read)
	total, err := m.Update([]int32{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if total.RunNanoseconds != 300 {
		t.Fatalf("total = %d, want 300", total.RunNanoseconds)
	}
	// Task 2 exits; its time is saved when a pass no longer lists it.
	delete(proc, 2)
	if total, _ = m.Update([]int32{1}); total.RunNanoseconds != 300 || m.Len() != 1 {
		t.Fatalf("after an exit: total %d with %d ids, want 300 with 1", total.RunNanoseconds, m.Len())
	}
	// Task 1 exits and a new task takes id 1 between two passes: keyed by
	// the id alone, the old task's 100 ns are overwritten.
	proc[1] = run(5)
	total, _ = m.Update([]int32{1})
	if total.RunNanoseconds != 205 {
		t.Errorf("after reuse: total %d, want 205 (the old task's 100 ns lost)", total.RunNanoseconds)
	}
}

func TestUpdateFailsOnOneMissingTask(t *testing.T) {
	proc := fakeProc{1: run(1)}
	if _, err := baseline.NewPruned(proc.read).Update([]int32{1, 2}); !errors.Is(err, unix.ENOENT) {
		t.Errorf("Update with a missing task: %v, want ENOENT", err)
	}
}

// chain lists "/", then a chain of depth-1 cgroups, then two leaves below
// it, with tasks 1 and 2 in the leaves.
func chain(depth int) *cgroupfs.Listing {
	l := &cgroupfs.Listing{}
	l.Add("/", -1)
	path := ""
	for d := 1; d < depth; d++ {
		path += "/l" + strconv.Itoa(d)
		l.Add(path, len(l.Cgroups)-1)
	}
	parent := len(l.Cgroups) - 1
	l.Add(path+"/a", parent).TIDs = []int32{1}
	l.Add(path+"/b", parent).TIDs = []int32{2}
	return l
}

func TestPerLevelReadsOncePerAncestor(t *testing.T) {
	proc := fakeProc{1: run(10), 2: run(20)}
	for _, depth := range []int{1, 4, 8} {
		l := chain(depth)
		per := baseline.NewPerLevel(proc.read)
		flat := baseline.NewFlat(proc.read)
		if err := per.Pass(l); err != nil {
			t.Fatal(err)
		}
		if err := flat.Pass(l); err != nil {
			t.Fatal(err)
		}
		if got, want := per.Reads(), 2*(depth+1); got != want {
			t.Errorf("depth %d: per-level handlers read %d times, want %d", depth, got, want)
		}
		if got := flat.Reads(); got != 2 {
			t.Errorf("depth %d: flat handlers read %d times, want 2", depth, got)
		}
		if got := per.Totals[0].RunNanoseconds; got != 30 {
			t.Errorf("depth %d: root total %d, want 30", depth, got)
		}
		var own []uint64
		for _, s := range flat.Totals {
			own = append(own, s.RunNanoseconds)
		}
		want := make([]uint64, depth-1+3)
		want[len(want)-2], want[len(want)-1] = 10, 20
		if diff := cmp.Diff(want, own); diff != "" {
			t.Errorf("depth %d: flat totals (-want +got):\n%s", depth, diff)
		}
	}
}
