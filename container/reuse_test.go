package container_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

const envInPIDNS = "SCHEDSTATD_TEST_IN_PIDNS"

// TestRealPIDReuse reproduces real PID reuse: it re-runs itself as PID 1
// of a new PID namespace with its own /proc, where writing
// /proc/sys/kernel/ns_last_pid picks the id the next child gets. It runs
// over both task sources, so the iterator is shown to report the
// namespace's ids.
func TestRealPIDReuse(t *testing.T) {
	if os.Getenv(envInPIDNS) == "" {
		e2e.RequireRoot(t)
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			e2e.Unavailable(t, "no unshare(1)")
		}
		cmd := exec.Command(unshare, "--pid", "--fork", "--mount-proc", os.Args[0], "-test.run=^TestRealPIDReuse$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), envInPIDNS+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("in a new PID namespace:\n%s", out)
		if err != nil || !strings.Contains(string(out), "--- PASS: TestRealPIDReuse") {
			t.Fatalf("PID namespace run failed: %v", err)
		}
		return
	}
	if os.Getpid() != 1 {
		t.Fatalf("pid %d, want 1 in a new PID namespace", os.Getpid())
	}

	forEachSource(t, testcg.Default(), func(t *testing.T, src taskSource) {
		old := testproc.Spin(t)
		id := int32(old.Process.Pid)
		tree := synth.NewTree("/", "/a")
		tree.Set("/a", id)
		table := container.NewTable(src.wrap(tree), src.opener)
		defer table.Close()
		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
		before, _ := table.Snapshot().Lookup("/a")
		old.Process.Kill()
		old.Wait()

		// Take the id again. A runtime thread may take it first: retry.
		var young *exec.Cmd
		for try := 0; young == nil; try++ {
			if try == 100 {
				t.Fatalf("could not get id %d again", id)
			}
			if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(int(id-1))), 0); err != nil {
				t.Fatal(err)
			}
			c := testproc.Spin(t)
			if c.Process.Pid == int(id) {
				young = c
			} else {
				c.Process.Kill()
				c.Wait()
			}
		}
		time.Sleep(30 * time.Millisecond)
		young.Process.Signal(syscall.SIGSTOP)
		testproc.WaitStopped(t, young.Process.Pid)
		own := kernelStat(t, young.Process.Pid, id)

		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
		after, _ := table.Snapshot().Lookup("/a")
		t.Logf("id %d: old task counted %d ns, new task ran %d ns, total %d ns", id, before.Stat.RunNanoseconds, own.RunNanoseconds, after.Stat.RunNanoseconds)
		if want := before.Stat.Add(own); after.Stat != want {
			t.Errorf("after reuse: %+v, want the old task's %+v plus the new one's own %+v", after.Stat, before.Stat, own)
		}
		if c := table.Counters(); c.Reuses != 1 || c.Exits != 1 || c.Tracked != 1 {
			t.Errorf("reuses=%d exits=%d tracked=%d, want 1 1 1", c.Reuses, c.Exits, c.Tracked)
		}

	})
}
