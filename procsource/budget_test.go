package procsource_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/schedstat"
)

// TestFDBudgetKeepsCounting tracks more threads than the fd budget allows:
// the tasks beyond it are read by open, read and close, and the totals are
// exact all the same.
func TestFDBudgetKeepsCounting(t *testing.T) {
	p := testproc.Start(t, 30, nil)
	budget := &procsource.FDBudget{Max: 10}
	table := container.NewTable(threadsOf{t, p}, procsource.Opener{Root: "/proc", Budget: budget})
	defer table.Close()
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	p.Stop(t)
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	threads := len(p.Threads(t))
	if budget.Kept() != 10 || budget.Unkept() != threads-10 {
		t.Errorf("kept %d, unkept %d of %d threads; want 10 and the rest", budget.Kept(), budget.Unkept(), threads)
	}
	got, _ := table.Snapshot().Lookup("/w")
	if want := sumStats(t, p); got.Stat != want {
		t.Errorf("tracked %+v, kernel's sum %+v", got.Stat, want)
	}
	p.Kill()
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	if budget.Kept() != 0 || budget.Unkept() != 0 || table.Len() != 0 {
		t.Errorf("after exit: kept %d unkept %d tracked %d, want 0 0 0", budget.Kept(), budget.Unkept(), table.Len())
	}
}

func TestUnkeptReadDoesNotAllocate(t *testing.T) {
	p := testproc.Start(t, 1, nil)
	u, err := procsource.OpenUnkept("/proc", p.Workers[0])
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := u.Read(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Unkept.Read allocated %v times", allocs)
	}
	p.Kill()
	if _, err := u.Read(); !schedstat.IsGone(err) {
		t.Errorf("read of an exited task: %v, want a gone error", err)
	}
}

// threadsOf lists the live threads of one process as the cgroup "/w".
type threadsOf struct {
	t *testing.T
	p *testproc.Proc
}

func (l threadsOf) List(out *cgroupfs.Listing) error {
	tree := synth.NewTree("/", "/w")
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/task", l.p.PID)); err == nil {
		tree.Set("/w", l.p.Threads(l.t)...)
	}
	return tree.List(out)
}

// sumStats sums the process's threads' counters as the kernel shows them.
func sumStats(t *testing.T, p *testproc.Proc) schedstat.Stat {
	t.Helper()
	var sum schedstat.Stat
	for _, tid := range p.Threads(t) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", p.PID, tid))
		if err != nil {
			t.Fatal(err)
		}
		st, err := schedstat.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		sum = sum.Add(st)
	}
	return sum
}

func TestMain(m *testing.M) {
	testproc.Main()
	os.Exit(m.Run())
}
