package schedlat

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/schedstat"
)

// TestExitFlushReal runs a thread alone in a cgroup through 1,000 short
// sleeps, fewer waits than a task buffers before the program flushes them
// itself, and lets it exit. Once the thread is gone, where the flush
// iterator cannot reach it, its cgroup's counts hold every wait and
// timeslice its schedstat showed between two lines it printed, and the
// few besides: the final switch away flushed its buffer. The same with the buffer off
// (direct) for the slow path.
func TestExitFlushReal(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			_, s := openSource(t, Options{Latency: true, Preemption: true, direct: direct})
			parent := testcg.Make(t, testcg.Default())
			dir := filepath.Join(parent, "exit")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(dir) })
			if _, err := os.Stat(filepath.Join(dir, "cgroup.type")); err == nil {
				if err := os.WriteFile(filepath.Join(dir, "cgroup.type"), []byte("threaded"), 0); err != nil {
					t.Fatal(err)
				}
			}
			const naps = 1000
			cmd, in, out := startHelper(t, envExit, strconv.Itoa(naps))
			field := func(name string) []string {
				line, err := out.ReadString('\n')
				f := strings.Fields(line)
				if err != nil || len(f) < 2 || f[0] != name {
					t.Fatalf("exit helper printed %q (%v), want %s", line, err, name)
				}
				return f[1:]
			}
			tid, err := strconv.Atoi(field("tid")[0])
			if err != nil {
				t.Fatal(err)
			}
			testcg.Move(t, parent, cmd.Process.Pid)
			moveThread(t, dir, tid)
			if _, err := in.Write([]byte("go\n")); err != nil {
				t.Fatal(err)
			}
			stat := func(name string) schedstat.Stat {
				st, err := schedstat.Parse([]byte(strings.Join(field(name), " ")))
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			start, end := stat("start"), stat("end")
			slices, wait := end.Timeslices-start.Timeslices, end.WaitNanoseconds-start.WaitNanoseconds
			task := fmt.Sprintf("/proc/%d/task/%d", cmd.Process.Pid, tid)
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				if _, err := os.Stat(task); os.IsNotExist(err) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("thread %d did not exit", tid)
				}
			}
			// The thread leaves /proc (release_task) just before its
			// final switch away: read until that switch is in, or give
			// up and let the checks below fail.
			var c Counts
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				counts, err := s.Read()
				if err != nil {
					t.Fatal(err)
				}
				c = counts[inode(t, dir)]
				if c.Waits >= slices || time.Now().After(deadline) {
					break
				}
			}
			t.Logf("the thread's schedstat from its start line to its end line: %d timeslices, waited %dns; its cgroup's histogram: %d waits, %dns; lost %+v",
				slices, wait, c.Waits, c.WaitNanoseconds, s.Lost())
			// A sleep may end before its thread switches away (911 of
			// 1,000 did switch in a 6.1 VM).
			if slices < naps/2 {
				t.Fatalf("the thread ran %d timeslices in %d sleeps", slices, naps)
			}
			// Besides: the timeslice it printed its start line in, and
			// those of its way out (the end line, the exit), which an
			// emulated kernel beside two others preempts often (26 in
			// a 6.1 VM); a buffer flushed twice would double the count.
			if c.Waits < slices || c.Waits > slices+slices/10 {
				t.Errorf("histogram counts %d waits, the thread ran %d timeslices between its lines", c.Waits, slices)
			}
			if c.WaitNanoseconds < wait {
				t.Errorf("histogram sums %dns, the thread waited %dns between its lines", c.WaitNanoseconds, wait)
			}
		})
	}
}
