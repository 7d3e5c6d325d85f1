package cgroupfs

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// TestUsageMatchesSchedstat checks the oracle: a cgroup's own CPU counter
// equals the sum of its threads' run time from /proc/<tid>/schedstat. The
// helper's threads are moved into the cgroup's subtree while stopped and
// spin there until stopped again, so the counters of the cgroup and its
// ancestors in the test tree must show their run time since the move,
// within 0.1%.
func TestUsageMatchesSchedstat(t *testing.T) {
	for _, rc := range realCases {
		t.Run(rc.name, func(t *testing.T) {
			hdir := realHierarchy(t, rc.name)
			cdir := realHierarchy(t, rc.counter)
			top := makeCgroups(t, hdir, "x", "x/y")
			if cdir != hdir {
				makeTwin(t, cdir, top, "x", "x/y")
			}
			h := testproc.Start(t, 4, nil)
			// What the threads ran before the move (the runtime
			// starting, the workers' first spins) is not the cgroup's:
			// it is read, and the move made, while they are stopped.
			h.Stop(t)
			before := make(map[int32]uint64)
			for _, tid := range h.Threads(t) {
				before[tid] = runNanoseconds(t, tid)
			}
			testcg.Move(t, filepath.Join(hdir, top, "x/y"), h.PID)
			if cdir != hdir {
				testcg.Move(t, filepath.Join(cdir, top, "x/y"), h.PID)
			}
			h.Cont(t)
			ran := func() (sum uint64) {
				for _, tid := range h.Threads(t) {
					sum += runNanoseconds(t, tid) - before[tid]
				}
				return sum
			}
			// Spin for some 300 ms of CPU time, however busy the machine.
			for deadline := time.Now().Add(10 * time.Second); ran() < uint64(300*time.Millisecond); {
				if time.Now().After(deadline) {
					t.Fatalf("threads ran only %v in 10 s", time.Duration(ran()))
				}
				time.Sleep(20 * time.Millisecond)
			}
			h.Stop(t)

			hier, err := Open(sysCgroup, rc.name)
			if err != nil {
				t.Fatal(err)
			}
			var l Listing
			if err := hier.List(&l); err != nil {
				t.Fatal(err)
			}
			want := ran()
			for rel, c := range subtree(&l, top) {
				if !c.HasUsage || c.Err != nil {
					t.Errorf("%s: HasUsage %v, Err %v", c.Path, c.HasUsage, c.Err)
					continue
				}
				diff := math.Abs(float64(c.UsageNanoseconds)-float64(want)) / float64(want)
				t.Logf("%-4s usage %d ns, threads' run time %d ns, off by %.6f%%", rel, c.UsageNanoseconds, want, diff*100)
				if diff > 0.001 {
					t.Errorf("%s: usage %d ns, threads ran %d ns: off by %.4f%%", c.Path, c.UsageNanoseconds, want, diff*100)
				}
			}
		})
	}
}

// runNanoseconds returns the first field of /proc/<tid>/schedstat, the
// thread's time on a CPU in nanoseconds.
func runNanoseconds(t *testing.T, tid int32) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", tid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	n, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil || len(f) != 3 {
		t.Fatalf("/proc/%d/schedstat: %q", tid, b)
	}
	return n
}
