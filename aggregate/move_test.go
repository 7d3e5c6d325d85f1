package aggregate

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/schedstat"
)

// moveSetup opens a source over the hierarchy name, with the move program
// if moves, and a table of totals over it, makes two sibling cgroups a and
// b, and starts a spinning single-threaded process in a, unseen by any
// pass yet.
func moveSetup(t *testing.T, name string, moves bool) (h *cgroupfs.Hierarchy, s *Source, table *container.Table, a, b string, pid int) {
	t.Helper()
	testcg.Require(t, name)
	h = hierarchy(t, name)
	s = openSource(t, Options{Hierarchy: h, Exits: true, Moves: moves})
	if s.moves != moves {
		t.Fatalf("moves loaded %v, want %v", s.moves, moves)
	}
	table = container.NewCgroupTable(s.Lister(), s)
	t.Cleanup(func() { table.Close() })
	top := testcg.Make(t, name)
	a, b = filepath.Join(top, "a"), filepath.Join(top, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pid = testproc.Spin(t).Process.Pid
	t.Cleanup(func() { testcg.Remove(t, top, a); testcg.Remove(t, top, b) })
	testcg.Move(t, a, pid)
	return h, s, table, a, b, pid
}

// passTwo runs a pass of table and returns the totals of the cgroups at a
// and b.
func passTwo(t *testing.T, table *container.Table, h *cgroupfs.Hierarchy, a, b string) (ina, inb schedstat.Stat) {
	t.Helper()
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	snap := table.Snapshot()
	x, _ := snap.Lookup(rel(t, h, a))
	y, _ := snap.Lookup(rel(t, h, b))
	return x.Stat, y.Stat
}

// readTask returns the counters of task tid, as procfs shows them.
func readTask(t *testing.T, tid int) schedstat.Stat {
	t.Helper()
	task, err := procsource.Open("/proc", int32(tid))
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close()
	st, err := task.Read()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// stopTask stops process pid and waits until its threads are off their CPUs.
func stopTask(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	testproc.WaitStopped(t, pid)
}

// TestMovesSplitAtTheMove moves a spinning single-threaded process from
// one cgroup to another between two passes, stopped at each end of each
// stretch so that its counters hold still: with Options.Moves its time
// before the move counts in the cgroup it left and the rest in the new
// one, to the nanosecond; without, the new cgroup gets both stretches.
func TestMovesSplitAtTheMove(t *testing.T) {
	requireTaskStorage(t)
	for _, name := range hierarchies {
		for _, moves := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/moves=%v", name, moves), func(t *testing.T) {
				h, _, table, a, b, pid := moveSetup(t, name, moves)
				stopped := func() schedstat.Stat {
					t.Helper()
					stopTask(t, pid)
					return readTask(t, pid)
				}
				run := func() schedstat.Stat {
					t.Helper()
					if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
						t.Fatal(err)
					}
					time.Sleep(200 * time.Millisecond)
					return stopped()
				}
				pass := func() (ina, inb schedstat.Stat) { return passTwo(t, table, h, a, b) }

				s0 := stopped()
				a0, b0 := pass()
				s1 := run()
				testcg.Move(t, b, pid)
				s2 := run()
				a1, b1 := pass()

				before, after := s1.Since(s0), s2.Since(s1)
				gotA, gotB := a1.Since(a0), b1.Since(b0)
				t.Logf("before the move %+v, after %+v; %s got %+v, %s got %+v", before, after, rel(t, h, a), gotA, rel(t, h, b), gotB)
				if before.RunNanoseconds == 0 || after.RunNanoseconds == 0 {
					t.Fatalf("the spinner did not run on both sides of the move: %+v, %+v", before, after)
				}
				wantA, wantB := before, after
				if !moves {
					wantA, wantB = schedstat.Stat{}, before.Add(after)
				}
				if gotA != wantA || gotB != wantB {
					t.Errorf("%s got %+v, want %+v; %s got %+v, want %+v", rel(t, h, a), gotA, wantA, rel(t, h, b), gotB, wantB)
				}
			})
		}
	}
}

// TestMovesRaceVisits moves a spinning process between two cgroups as
// fast as it can while passes run back to back, so that the move program
// and the iterator read the same task at once, over and over: each
// increase must be claimed once, so with the spinner stopped at both ends
// the two cgroups' totals together grew by exactly what it ran, waited
// and was scheduled.
func TestMovesRaceVisits(t *testing.T) {
	requireTaskStorage(t)
	h, _, table, a, b, pid := moveSetup(t, walked, true)
	read := func() schedstat.Stat { return readTask(t, pid) }
	both := func() schedstat.Stat {
		x, y := passTwo(t, table, h, a, b)
		return x.Add(y)
	}
	stop := func() { stopTask(t, pid) }
	stop()
	start, total0 := read(), both()
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	moved, passes := 0, 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		// 2 s and 200 moves, whichever takes longer (an emulated kernel
		// moves a few hundred times a second), within 30 s.
		start := time.Now()
		for ; (time.Since(start) < 2*time.Second || moved < 200) && time.Since(start) < 30*time.Second; moved++ {
			dir := a
			if moved%2 == 0 {
				dir = b
			}
			if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(fmt.Sprint(pid)), 0); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for running := true; running; passes++ {
		select {
		case <-done:
			running = false
		default:
		}
		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	end, total1 := read(), both()
	want, got := end.Since(start), total1.Since(total0)
	t.Logf("%d moves, %d passes: the spinner %+v, its two cgroups %+v", moved, passes, want, got)
	if moved < 200 || passes < 10 {
		t.Fatalf("only %d moves and %d passes", moved, passes)
	}
	if got != want {
		t.Errorf("the two cgroups grew by %+v, the spinner by %+v", got, want)
	}
}
