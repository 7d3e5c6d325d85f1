package taskiter_test

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
)

// TestScenarioReal runs a table over each source through the events the
// accounting must get right: tasks that run, move to another cgroup, exit
// and linger as zombies, and are reaped. Workloads are stopped before each
// pass, so the two tables must agree exactly on every test cgroup, and no
// counter may decrease.
func TestScenarioReal(t *testing.T) {
	for _, name := range hierarchies {
		t.Run(name, func(t *testing.T) {
			h, s := open(t, name)
			top := testcg.Make(t, name)
			a, b := filepath.Join(top, "a"), filepath.Join(top, "b")
			for _, d := range []string{a, b} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			paths := []string{rel(t, h, top), rel(t, h, a), rel(t, h, b)}
			iter := container.NewTable(s.Lister(), s.Opener())
			proc := container.NewTable(h, procsource.Opener{Root: "/proc", Budget: procsource.SharedBudget(4)})
			defer iter.Close()
			defer proc.Close()

			last := map[string]container.CgroupStats{}
			compare := func(step string) {
				t.Helper()
				if err := iter.Pass(); err != nil {
					t.Fatal(err)
				}
				if err := proc.Pass(); err != nil {
					t.Fatal(err)
				}
				for _, p := range paths {
					want, _ := proc.Snapshot().Lookup(p)
					got, _ := iter.Snapshot().Lookup(p)
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s: %s (-procfs +iterator):\n%s", step, p, diff)
					}
					if prev := last[p]; got.Stat.RunNanoseconds < prev.Stat.RunNanoseconds || got.Stat.Timeslices < prev.Stat.Timeslices {
						t.Errorf("%s: %s decreased from %+v to %+v", step, p, prev.Stat, got.Stat)
					}
					last[p] = got
				}
			}
			run := func(ps ...*testproc.Proc) {
				for _, p := range ps {
					p.Cont(t)
				}
				time.Sleep(20 * time.Millisecond)
				for _, p := range ps {
					p.Stop(t)
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

			// y exits; its leader stays a zombie until reaped.
			syscall.Kill(y.PID, syscall.SIGKILL)
			waitZombie(t, y)
			// Dying threads still run their last stretch after they
			// leave the task list; let the counter settle.
			settleUsage(t, a)
			compare("zombie")
			y.Kill()
			compare("reaped")
			run(x, z)
			compare("ran after the exit")
			if c := iter.Counters(); c.Exits == 0 {
				t.Errorf("iterator table counted no exits: %+v", c)
			}
		})
	}
}

// waitZombie waits until p is a zombie with no thread but its leader.
// settleUsage returns once the CPU counter of the cgroup at dir has held
// still for 20 ms.
func settleUsage(t *testing.T, dir string) {
	t.Helper()
	last := testcg.Usage(t, dir)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		now := testcg.Usage(t, dir)
		if now == last {
			return
		}
		last = now
	}
	t.Fatalf("the CPU counter of %s did not settle in 10s", dir)
}

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
