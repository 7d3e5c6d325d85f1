package container_test

import (
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testproc"
	"github.com/schedstatd/schedstatd/schedstat"
)

// TestFDBudgetKeepsCounting tracks more threads than the fd budget allows:
// the tasks beyond it are read by open, read and close, and the totals are
// exact all the same.
func TestFDBudgetKeepsCounting(t *testing.T) {
	p := testproc.Start(t, 30, nil)
	budget := &container.FDBudget{Max: 10}
	table := container.NewTable(liveTree{&procThreads{t: t, p: p}}, container.ProcOpener{Root: "/proc", Budget: budget})
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
	if c := table.Counters(); c.Unkept != threads-10 {
		t.Errorf("Counters.Unkept = %d, want %d", c.Unkept, threads-10)
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
	u, err := schedstat.OpenUnkept("/proc", p.Workers[0])
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, schedstat.BufferSize)
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := u.Read(buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Unkept.Read allocated %v times", allocs)
	}
	p.Kill()
	if _, err := u.Read(buf); !schedstat.IsGone(err) {
		t.Errorf("read of an exited task: %v, want a gone error", err)
	}
}
