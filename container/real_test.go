package container_test

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
)

// userHZ is the kernel's USER_HZ, the unit of utime and stime in
// /proc/<pid>/stat; it is 100 on every Linux ABI.
const userHZ = 100

// procThreads lists every thread of one process as the cgroup "/w".
type procThreads struct {
	t    *testing.T
	p    *testproc.Proc
	only []int32 // if set, list only these of its threads
}

func (l *procThreads) tree() *synth.Tree {
	var tids []int32
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/task", l.p.PID)); err == nil {
		tids = l.p.Threads(l.t)
	}
	if l.only != nil {
		var keep []int32
		for _, tid := range tids {
			for _, o := range l.only {
				if tid == o {
					keep = append(keep, tid)
				}
			}
		}
		tids = keep
	}
	tr := synth.NewTree("/", "/w")
	tr.Set("/w", tids...)
	return tr
}

// liveTree lists the process's threads as they are at each pass.
type liveTree struct{ l *procThreads }

func (lt liveTree) List(l *cgroupfs.Listing) error { return lt.l.tree().List(l) }

func TestRealThreadsMatchKernel(t *testing.T) {
	forEachSource(t, testcg.Default(), func(t *testing.T, src taskSource) {
		p := testproc.Start(t, 4, nil)
		table := container.NewTable(src.wrap(liveTree{&procThreads{t: t, p: p}}), src.opener)
		defer table.Close()
		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
		// Long enough for the workers to outrun the main thread's start-up,
		// which under software emulation (the kernel matrix's VMs) takes
		// a third of a second.
		time.Sleep(time.Second)
		p.Stop(t)
		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
		got, _ := table.Snapshot().Lookup("/w")
		want := sumStats(t, p)
		if got.Stat != want {
			t.Errorf("tracked %+v, kernel's per-thread sum %+v", got.Stat, want)
		}
		nthreads := len(p.Threads(t))
		if got.Tasks != nthreads {
			t.Errorf("tasks = %d, want %d", got.Tasks, nthreads)
		}

		// utime+stime of the whole process, in ticks: within a tick a thread.
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:])
		utime, _ := strconv.ParseUint(f[14-3], 10, 64)
		stime, _ := strconv.ParseUint(f[15-3], 10, 64)
		cpu := float64(utime+stime) * 1e9 / userHZ
		if diff := math.Abs(float64(got.Stat.RunNanoseconds) - cpu); diff > float64(nthreads)*1e9/userHZ {
			t.Errorf("run %d ns, utime+stime %.0f ns: off by %.0f ns, more than a tick for each of %d threads", got.Stat.RunNanoseconds, cpu, diff, nthreads)
		}

		// What a per-process reader shows: the main thread only.
		main := kernelStat(t, p.PID, int32(p.PID))
		t.Logf("all %d threads: %d ns; /proc/%d/schedstat alone: %d ns", nthreads, got.Stat.RunNanoseconds, p.PID, main.RunNanoseconds)
		// Natively the main thread has well under a quarter; under
		// software emulation on a loaded host (the kernel matrix's VMs),
		// where a guest thread is charged while its virtual CPU waits for
		// the host, up to a third. Half is the bound on both.
		if main.RunNanoseconds*2 > got.Stat.RunNanoseconds {
			t.Errorf("main thread %d ns is more than half of %d ns: the workers did not spin", main.RunNanoseconds, got.Stat.RunNanoseconds)
		}
	})
}

func TestRealThreadExitKeepsTotals(t *testing.T) {
	forEachSource(t, testcg.Default(), func(t *testing.T, src taskSource) {
		p := testproc.Start(t, 3, nil)
		table := container.NewTable(src.wrap(liveTree{&procThreads{t: t, p: p, only: p.Workers}}), src.opener)
		defer table.Close()
		time.Sleep(100 * time.Millisecond)
		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
		before, _ := table.Snapshot().Lookup("/w")
		if before.Tasks != 3 || before.Stat.RunNanoseconds == 0 {
			t.Fatalf("before exit: %+v", before)
		}
		time.Sleep(50 * time.Millisecond)
		p.Release(t)
		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
		after, _ := table.Snapshot().Lookup("/w")
		if after.Stat != before.Stat {
			t.Errorf("after the threads exited: %+v, want exactly what the last pass saw, %+v", after.Stat, before.Stat)
		}
		if c := table.Counters(); c.Exits != 3 || c.Tracked != 0 {
			t.Errorf("exits=%d tracked=%d, want 3 0", c.Exits, c.Tracked)
		}
	})
}

func TestRealZombieFinalValuesCount(t *testing.T) {
	forEachSource(t, testcg.Default(), func(t *testing.T, src taskSource) {
		cg := testcg.Make(t, testcg.Default())
		cmd := testproc.Spin(t)
		pid := cmd.Process.Pid
		testcg.Move(t, cg, pid)
		table := container.NewTable(src.wrap(&dirLister{t: t, dirs: []string{cg}}), src.opener)
		defer table.Close()
		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		syscall.Kill(pid, syscall.SIGKILL)
		for testproc.State(pid, int32(pid)) != 'Z' {
			time.Sleep(time.Millisecond)
		}
		if ids := testcg.Threads(t, cg); len(ids) != 0 {
			t.Fatalf("zombie still listed: %v", ids)
		}
		final := kernelStat(t, pid, int32(pid))
		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
		got := table.Snapshot().Cgroups[0].Stat
		if got != final {
			t.Errorf("with a zombie: %+v, want its final counters %+v", got, final)
		}
		cmd.Wait()
		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
		if after := table.Snapshot().Cgroups[0].Stat; after != final {
			t.Errorf("after reaping: %+v, want %+v", after, final)
		}
		if c := table.Counters(); c.Exits != 1 || c.Unlisted != 1 {
			t.Errorf("exits=%d unlisted=%d, want 1 1", c.Exits, c.Unlisted)
		}
	})
}

func TestRealMigrationIsNotCountedTwice(t *testing.T) {
	forEachSource(t, testcg.Default(), func(t *testing.T, src taskSource) {
		parent := testcg.Make(t, testcg.Default())
		a, b := parent+"/a", parent+"/b"
		for _, d := range []string{a, b} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		p := testproc.Start(t, 2, nil)
		testcg.Move(t, a, p.PID)
		table := container.NewTable(src.wrap(&dirLister{t: t, dirs: []string{parent, a, b}}), src.opener)
		defer table.Close()
		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		// Stopped across the pass and the move, the threads run nothing that
		// falls between them, so b's share is exactly its own time.
		p.Stop(t)
		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
		testcg.Move(t, b, p.PID)
		p.Cont(t)
		time.Sleep(200 * time.Millisecond)
		p.Stop(t)
		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
		s := table.Snapshot()
		root, _ := s.Lookup("/")
		inA, _ := s.Lookup("/a")
		inB, _ := s.Lookup("/b")
		life := sumStats(t, p)
		if root.Stat != life {
			t.Errorf("parent %+v, want the threads' lifetime sum %+v", root.Stat, life)
		}
		if sum := inA.Stat.Add(inB.Stat); sum != life {
			t.Errorf("a+b = %+v, want %+v: counted twice or lost", sum, life)
		}
		if !inB.HasUsage || !within(inB.Stat.RunNanoseconds, inB.UsageNanoseconds, 0.01) {
			t.Errorf("b ran %d ns by schedstat, %d ns by cpuacct.usage: the move brought more than the time after it", inB.Stat.RunNanoseconds, inB.UsageNanoseconds)
		}
	})
}

// within reports whether got is within frac of want.
func within(got, want uint64, frac float64) bool {
	return math.Abs(float64(got)-float64(want)) <= frac*float64(want)
}

func TestRealSteadyStatePassDoesNotAllocate(t *testing.T) {
	forEachSource(t, testcg.Default(), func(t *testing.T, src taskSource) {
		p := testproc.Start(t, 8, nil)
		tree := synth.NewTree("/", "/w")
		tree.Set("/w", p.Threads(t)...)
		table := container.NewTable(src.wrap(tree), src.opener)
		defer table.Close()
		for range 2 {
			if err := table.Pass(); err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(20, func() {
			if err := table.Pass(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("steady-state pass over %d real threads allocated %v times, want 0", table.Len(), allocs)
		}
	})
}

// killAfterList lists a process's threads and then kills and reaps it, so
// every listed task is gone by the time the pass reads it.
type killAfterList struct {
	tree *synth.Tree
	kill func()
}

func (k *killAfterList) List(l *cgroupfs.Listing) error {
	err := k.tree.List(l)
	if k.kill != nil {
		k.kill()
		k.kill = nil
	}
	return err
}

func TestRealTaskGoneBetweenListingAndReading(t *testing.T) {
	p := testproc.Start(t, 4, nil)
	tree := synth.NewTree("/", "/w")
	tree.Set("/w", p.Threads(t)...)
	lister := &killAfterList{tree: tree}
	table := container.NewTable(lister, procsource.Opener{Root: "/proc"})
	defer table.Close()
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	before, _ := table.Snapshot().Lookup("/w")
	lister.kill = p.Kill
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	after, _ := table.Snapshot().Lookup("/w")
	if after.Stat != before.Stat {
		t.Errorf("after the listed tasks vanished: %+v, want what was counted, %+v", after.Stat, before.Stat)
	}
	c := table.Counters()
	var errs uint64
	for _, r := range container.Reasons() {
		errs += c.ReadErrorsFor(r)
	}
	if errs != 0 || c.Tracked != 0 || c.Exits != uint64(len(tree.Cgroups[1].TIDs)) {
		t.Errorf("read errors %d, tracked %d, exits %d; want 0, 0, %d", errs, c.Tracked, c.Exits, len(tree.Cgroups[1].TIDs))
	}
}
