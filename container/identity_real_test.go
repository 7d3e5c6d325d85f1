package container_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
	"golang.org/x/sys/unix"
)

// realTable is a table over the whole real hierarchy, procfs source.
func realTable(t *testing.T, hierarchy string) *container.Table {
	t.Helper()
	h, err := cgroupfs.Open(testcg.Root, hierarchy)
	if err != nil {
		t.Fatal(err)
	}
	table := container.NewTable(h, procsource.Opener{Root: "/proc", Budget: procsource.SharedBudget(4)})
	t.Cleanup(func() { table.Close() })
	return table
}

// exhaustFDs leaves only free file descriptors to open, under a lowered
// soft limit, until the returned function gives them back.
func exhaustFDs(t *testing.T, free int) (restore func()) {
	t.Helper()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = uint64(len(ents)) + 512
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var fds []int
	for {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			break
		}
		fds = append(fds, fd)
	}
	for range min(free, len(fds)) {
		unix.Close(fds[len(fds)-1])
		fds = fds[:len(fds)-1]
	}
	return func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
		unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
	}
}

// TestRealFDLimitIsNotRemoval: passes under an exhausted fd limit, with
// 0 to 8 fds left, fail at the root or read part of the tree; none takes
// a cgroup it could not open for a removed one, or a task it could not
// read for an exited one. No series falls, no task of the test exits, the
// partial passes are counted by reason, and the first complete pass after
// them has every thread's time.
func TestRealFDLimitIsNotRemoval(t *testing.T) {
	cg := testcg.Make(t, testcg.Default())
	sub := filepath.Join(cg, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testcg.Remove(t, cg, sub) })
	p := testproc.StartIn(t, 2, sub)
	table := realTable(t, testcg.Default())
	rel, relSub := "/"+filepath.Base(cg), "/"+filepath.Base(cg)+"/sub"
	// The window's ends are read with the threads stopped, so the table
	// and the CPU counter see the same time however loaded the machine.
	p.Stop(t)
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	usage0 := testcg.Usage(t, sub)
	first, _ := table.Snapshot().Lookup(relSub)
	p.Cont(t)
	exits0 := table.Counters().Exits
	last := map[string]uint64{}
	for free := range 9 {
		time.Sleep(20 * time.Millisecond)
		restore := exhaustFDs(t, free)
		err := table.Pass()
		restore()
		s := table.Snapshot()
		for _, path := range []string{rel, relSub} {
			c, ok := s.Lookup(path)
			if !ok {
				t.Fatalf("%d fds free (pass error %v): %s is gone from the snapshot", free, err, path)
			}
			if c.Stat.RunNanoseconds < last[path] {
				t.Fatalf("%d fds free: %s fell from %d to %d", free, path, last[path], c.Stat.RunNanoseconds)
			}
			if c.Tasks < len(p.Workers) {
				t.Fatalf("%d fds free: %s shows %d tasks, fewer than the helper's %d workers", free, path, c.Tasks, len(p.Workers))
			}
			last[path] = c.Stat.RunNanoseconds
		}
		t.Logf("%d fds free: pass error %v; cgroups read %d, unread %d", free, err, s.Counters.CgroupsRead, s.Counters.CgroupsUnread)
	}
	c := table.Counters()
	if c.PartialPasses == 0 || c.CgroupReadErrorsFor(container.ReasonFDLimit) == 0 {
		t.Errorf("no pass was partial for want of fds: %+v", c)
	}
	time.Sleep(100 * time.Millisecond)
	p.Stop(t)
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d tasks of the node exited meanwhile", table.Counters().Exits-exits0)
	got, _ := table.Snapshot().Lookup(relSub)
	if got.Tasks != len(p.Threads(t)) {
		t.Errorf("%s lists %d tasks, want %d", relSub, got.Tasks, len(p.Threads(t)))
	}
	ran, used := got.Stat.RunNanoseconds-first.Stat.RunNanoseconds, testcg.Usage(t, sub)-usage0
	t.Logf("%s ran %d ns over the run, its CPU counter %d ns (%.4f)", relSub, ran, used, float64(ran)/float64(used))
	if r := float64(ran) / float64(used); r < 0.99 || r > 1.01 {
		t.Errorf("%s ran %d ns, its CPU counter %d ns: more than 1%% apart", relSub, ran, used)
	}
}

// TestRealRecreatedCgroupNeverFalls: a cgroup removed and made again under
// the same name between two passes, and a CPU counter reset by a write,
// leave every series of the path where it was, growing from there.
func TestRealRecreatedCgroupNeverFalls(t *testing.T) {
	cg := testcg.Make(t, testcg.Default())
	sub := filepath.Join(cg, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testcg.Remove(t, cg, sub) })
	p := testproc.StartIn(t, 1, sub)
	table := realTable(t, testcg.Default())
	relSub := "/" + filepath.Base(cg) + "/sub"
	time.Sleep(100 * time.Millisecond)
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	before, _ := table.Snapshot().Lookup(relSub)
	var st unix.Stat_t
	unix.Stat(sub, &st)
	oldID := st.Ino
	testcg.Move(t, cg, p.PID)
	if err := os.Remove(sub); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	unix.Stat(sub, &st)
	if st.Ino == oldID {
		t.Fatal("the kernel gave the new cgroup the old inode")
	}
	testcg.Move(t, sub, p.PID)
	time.Sleep(50 * time.Millisecond)
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	after, _ := table.Snapshot().Lookup(relSub)
	t.Logf("before: run %d usage %d; made again: run %d usage %d (kernel counter now %d)",
		before.Stat.RunNanoseconds, before.UsageNanoseconds, after.Stat.RunNanoseconds, after.UsageNanoseconds, testcg.Usage(t, sub))
	if after.Stat.RunNanoseconds < before.Stat.RunNanoseconds || after.UsageNanoseconds < before.UsageNanoseconds || after.Stat.Timeslices < before.Stat.Timeslices {
		t.Errorf("made again, %s fell: %+v usage %d -> %+v usage %d", relSub, before.Stat, before.UsageNanoseconds, after.Stat, after.UsageNanoseconds)
	}
	if testcg.PureV2() {
		t.Log("pure cgroup v2 machine: cpu.stat takes no write, so the counter-reset half of this test (v1 cpuacct.usage) is not run")
		return
	}
	if err := os.WriteFile(filepath.Join(sub, "cpuacct.usage"), []byte("0"), 0); err != nil {
		t.Fatal(err)
	}
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	reset, _ := table.Snapshot().Lookup(relSub)
	if reset.UsageNanoseconds < after.UsageNanoseconds {
		t.Errorf("after a reset of cpuacct.usage the series fell from %d to %d", after.UsageNanoseconds, reset.UsageNanoseconds)
	}
}
