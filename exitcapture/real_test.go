package exitcapture

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// unifiedRoot is the test machine's cgroup2 mount: /sys/fs/cgroup/unified
// on a hybrid machine, /sys/fs/cgroup on a pure v2 one.
var unifiedRoot = testcg.Dir(testcg.Unified)

// walked is the hierarchy the daemon walks on this machine by default: v1
// cpuacct on a hybrid node, the unified one on a pure v2 node.
var walked = testcg.Default()

// hierarchy opens the hierarchy called name under the test machine's
// cgroup root.
func hierarchy(t testing.TB, name string) *cgroupfs.Hierarchy {
	t.Helper()
	h, err := cgroupfs.Open(testcg.Root, name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// openSource opens a source over the walked hierarchy, unless opts names
// another, and closes it when the test ends. It needs root.
func openSource(t testing.TB, opts Options) *Source {
	t.Helper()
	e2e.RequireRoot(t)
	if opts.Hierarchy == nil {
		opts.Hierarchy = hierarchy(t, walked)
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// twin makes a cgroup in the hierarchy the daemon walks here (see
// testcg.Default) and, on a hybrid machine, one of the same name in the
// unified hierarchy, as on a hybrid node whose tasks sit in both; it
// returns their directories and their common relative path. On a pure v2
// machine the walked cgroup is the unified one: v1 and v2 are the same.
func twin(t testing.TB) (v1, v2, rel string) {
	t.Helper()
	v1 = testcg.Make(t, testcg.Default())
	rel = "/" + filepath.Base(v1)
	if testcg.PureV2() {
		return v1, v1, rel
	}
	v2 = filepath.Join(unifiedRoot, rel)
	if err := os.Mkdir(v2, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testcg.Remove(t, unifiedRoot, v2) })
	return v1, v2, rel
}

// collect drains s until done says it has what it needs, or fails the test
// after timeout.
func collect(t testing.TB, s *Source, timeout time.Duration, done func(map[int32]container.Exit) bool) map[int32]container.Exit {
	t.Helper()
	got := map[int32]container.Exit{}
	deadline := time.Now().Add(timeout)
	for {
		s.Drain(func(x container.Exit) { got[x.TID] = x })
		if done(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("no complete set of records after %s; have %d", timeout, len(got))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRecordsMatchProc: threads that exit while their process lives on,
// then the process itself, each send one record, named by the same id and
// start time /proc shows, attributed to the id of their cgroup in the
// walked hierarchy (v1 cpuacct, or cgroup2), with its parent and the root
// as ancestors. In v1 the task sits in a unified cgroup of another name,
// which must not matter. The main thread's record holds exactly what its
// zombie's schedstat holds, at either hook: sched_process_free fires after
// the final switch away, when the counters are final.
func TestRecordsMatchProc(t *testing.T) {
	for _, tc := range []struct {
		name, hierarchy string
		opts            Options
	}{
		{"cgroup2/sched_process_free", "unified", Options{}},
		{"cgroup2/sched_switch, prev_state argument", "unified", Options{Hook: HookSwitch}},
		{"cgroup2/sched_switch, state read from prev", "unified", Options{stateFromTask: true}},
		{"v1 cpuacct/sched_process_free", "cpuacct", Options{}},
		{"v1 cpuacct/sched_switch", "cpuacct", Options{Hook: HookSwitch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testcg.Require(t, tc.hierarchy)
			tc.opts.Hierarchy = hierarchy(t, tc.hierarchy)
			s := openSource(t, tc.opts)
			if want := map[bool]Hook{true: HookFree, false: HookSwitch}[tc.opts.Hook == HookAuto && !tc.opts.stateFromTask]; s.Hook() != want {
				t.Fatalf("opened at %s, want %s", s.Hook(), want)
			}
			parent := testcg.Make(t, tc.hierarchy)
			dir := filepath.Join(parent, "leaf")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { testcg.Remove(t, parent, dir) })
			p := testproc.StartIn(t, 3, dir)
			if tc.hierarchy != "unified" {
				// Elsewhere in cgroup2, under another name.
				testcg.Move(t, testcg.Make(t, "unified"), p.PID)
			}
			wantIDs := []uint64{inode(t, dir), inode(t, parent), inode(t, tc.opts.Hierarchy.Dir())}
			start := map[int32]uint64{}
			last := map[int32]schedstat.Stat{}
			for _, tid := range append(p.Workers, int32(p.PID)) {
				task, err := procsource.Open("/proc", tid)
				if err != nil {
					t.Fatal(err)
				}
				start[tid] = task.StartTime()
				if last[tid], err = task.Read(); err != nil {
					t.Fatal(err)
				}
				task.Close()
			}
			p.Release(t)
			p.Signal(t, syscall.SIGKILL)
			for testproc.State(p.PID, int32(p.PID)) != 'Z' {
				time.Sleep(time.Millisecond)
			}
			zombie, err := procsource.Open("/proc", int32(p.PID))
			if err != nil {
				t.Fatal(err)
			}
			// A task shows Z from exit_notify on, before its last switch
			// away ends its run: read until the counters hold still.
			final, err := zombie.Read()
			for deadline := time.Now().Add(2 * time.Second); err == nil && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
				var again schedstat.Stat
				if again, err = zombie.Read(); err == nil && again == final {
					break
				}
				final = again
			}
			zombie.Close()
			if err != nil {
				t.Fatal(err)
			}
			// The zombie is reaped first: at sched_process_free a task's
			// record comes once it is reaped and its last switch is done.
			p.Kill()
			got := collect(t, s, 5*time.Second, func(m map[int32]container.Exit) bool {
				for tid := range start {
					if _, ok := m[tid]; !ok {
						return false
					}
				}
				return true
			})
			for tid, st := range start {
				x := got[tid]
				ids := append([]uint64{x.Cgroup}, x.Ancestors[:2]...)
				if x.StartTime != st || !slices.Equal(ids, wantIDs) || x.Ancestors[2] != 0 || x.Final.RunNanoseconds < last[tid].RunNanoseconds || x.Final.Timeslices < last[tid].Timeslices {
					t.Errorf("task %d: record %+v; want start %d, cgroup and ancestors %v, counters at least %+v", tid, x, st, wantIDs, last[tid])
				}
			}
			if x := got[int32(p.PID)]; x.Final != final {
				t.Errorf("main thread's record holds %+v, its zombie's schedstat %+v", x.Final, final)
			}
			t.Logf("%d records, stats %+v", len(got), s.Stats())
		})
	}
}

// TestMain lets a re-executed test binary become a helper (a churn or
// testproc workload, or a probe of Select) instead of running tests.
func TestMain(m *testing.M) {
	testproc.Main()
	probe()
	raiseFDLimit()
	os.Exit(m.Run())
}

// raiseFDLimit lets the tables keep an fd for every thread on a busy node,
// as the daemon does; without the privilege the limit stays.
func raiseFDLimit() {
	const want = 1 << 20
	unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: want, Max: want})
}

// inode returns the inode of dir: a cgroup's id.
func inode(t testing.TB, dir string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}
