package aggregate

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/schedstat"
)

// TestScenarioReal runs the kernel's totals and the reference (procfs and
// exit records) through the events the accounting must get right: tasks
// that run, move to another cgroup, exit and linger as zombies, are
// reaped, and a cgroup removed and made again under its name. Workloads
// are stopped before each comparison, so the two tables must agree on
// every test cgroup to the nanosecond, task counts included, and no
// series may fall.
func TestScenarioReal(t *testing.T) {
	requireTaskStorage(t)
	for _, name := range hierarchies {
		t.Run(name, func(t *testing.T) {
			p := newPair(t, name)
			top := testcg.Make(t, name)
			a, b := filepath.Join(top, "a"), filepath.Join(top, "b")
			for _, d := range []string{a, b} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() { testcg.Remove(t, top, a); testcg.Remove(t, top, b) })
			paths := []string{rel(t, p.h, top), rel(t, p.h, a), rel(t, p.h, b)}
			last := map[string]container.CgroupStats{}
			compare := func(step string) {
				t.Helper()
				p.pass(t)
				p.compare(t, step, last, paths...)
			}
			run := func(ps ...*testproc.Proc) {
				for _, x := range ps {
					x.Cont(t)
				}
				time.Sleep(20 * time.Millisecond)
				for _, x := range ps {
					x.Stop(t)
				}
			}

			x := testproc.StartIn(t, 2, a)
			y := testproc.StartIn(t, 2, a)
			z := testproc.StartIn(t, 1, b)
			x.Stop(t)
			y.Stop(t)
			z.Stop(t)
			compare("start")
			run(x, y, z)
			compare("ran")

			testcg.Move(t, b, x.PID)
			compare("moved")
			run(x, y, z)
			compare("ran after the move")

			// y exits; its leader stays a zombie until reaped. Its
			// threads are freed at once, the leader at its reap.
			syscall.Kill(y.PID, syscall.SIGKILL)
			waitZombie(t, y)
			y.Kill()
			p.settle(t)
			compare("reaped")
			run(x, z)
			compare("ran after the exit")

			// b is emptied and removed: its totals stay in top. Made
			// again under its name, its series goes on.
			z.Kill()
			testcg.Move(t, a, x.PID)
			p.settle(t)
			compare("b emptied")
			if err := os.Remove(b); err != nil {
				t.Fatal(err)
			}
			compare("b removed")
			if err := os.Mkdir(b, 0o755); err != nil {
				t.Fatal(err)
			}
			testcg.Move(t, b, x.PID)
			run(x)
			compare("b made again")
			if c := p.kern.Counters(); c.Passes == 0 || c.Tracked == 0 || c.Exits == 0 {
				t.Errorf("kernel totals table counters %+v: want passes, tracked tasks and exits", c)
			}
			t.Logf("source %+v", p.agg.Stats())
		})
	}
}

// waitZombie waits until p is a zombie with no thread but its leader.
func waitZombie(t *testing.T, p *testproc.Proc) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ents, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(p.PID), "task"))
		if testproc.State(p.PID, int32(p.PID)) == 'Z' && len(ents) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d did not become a lone zombie", p.PID)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPrime: after Prime, a read credits none of the tasks' time so far
// (a restored table counted it), but counts the tasks; the next read
// credits exactly what they ran since.
func TestPrime(t *testing.T) {
	h := hierarchy(t, walked)
	s := openSource(t, Options{Hierarchy: h, Exits: true})
	dir := testcg.Make(t, walked)
	p := testproc.StartIn(t, 2, dir)
	time.Sleep(50 * time.Millisecond)
	p.Stop(t)
	table := container.NewCgroupTable(s.Lister(), s)
	t.Cleanup(func() { table.Close() })
	s.Prime()
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	before := lifetimes(t, p)
	cg, _ := table.Snapshot().Lookup(rel(t, h, dir))
	if cg.Stat != (schedstat.Stat{}) || cg.Tasks == 0 {
		t.Errorf("after a primed pass: %+v, want no time and some tasks", cg)
	}
	p.Cont(t)
	time.Sleep(50 * time.Millisecond)
	p.Stop(t)
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	want := lifetimes(t, p).Since(before)
	cg, _ = table.Snapshot().Lookup(rel(t, h, dir))
	if cg.Stat != want || want.RunNanoseconds == 0 {
		t.Errorf("after the next pass: %+v, want what the threads ran since the primed pass, %+v", cg.Stat, want)
	}
}

// lifetimes sums the counters of p's threads, as procfs shows them.
func lifetimes(t *testing.T, p *testproc.Proc) schedstat.Stat {
	t.Helper()
	var sum schedstat.Stat
	for _, tid := range testproc.Threads(t, p.PID) {
		task, err := procsource.Open("/proc", tid)
		if err != nil {
			t.Fatal(err)
		}
		st, err := task.Read()
		task.Close()
		if err != nil {
			t.Fatal(err)
		}
		sum = sum.Add(st)
	}
	return sum
}
