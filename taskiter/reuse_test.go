package taskiter_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/e2e"
	"github.com/schedstatd/schedstatd/internal/synth"
	"github.com/schedstatd/schedstatd/internal/testproc"
	"github.com/schedstatd/schedstatd/schedstat"
	"github.com/schedstatd/schedstatd/taskiter"
)

const envInPIDNS = "SCHEDSTATD_TEST_IN_PIDNS"

// readFirst is a Lister that reads the iterator and then lists a fixed
// tree, so a table's handles over the source see each pass's tasks.
type readFirst struct {
	s    *taskiter.Source
	tree *synth.Tree
}

func (r readFirst) List(l *cgroupfs.Listing) error {
	if err := r.s.Read(); err != nil {
		return err
	}
	return r.tree.List(l)
}

// TestRealPIDReuse reproduces real PID reuse with the iterator source: it
// re-runs itself as PID 1 of a new PID namespace with its own /proc,
// where writing /proc/sys/kernel/ns_last_pid picks the id the next child
// gets, and where the iterator must report the namespace's ids.
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
	_, s := open(t, "")

	old := spinner(t)
	id := int32(old.Process.Pid)
	tree := synth.NewTree("/", "/a")
	tree.Set("/a", id)
	table := container.NewTable(readFirst{s, tree}, s.Opener())
	defer table.Close()
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	// The namespace holds this test, the spinner and the Go runtime's
	// threads: the iterator shows no task of the host's.
	if n := s.Tasks(); n > 64 {
		t.Errorf("the iterator saw %d tasks in a PID namespace of a few", n)
	}
	before, _ := table.Snapshot().Lookup("/a")
	if before.Stat.RunNanoseconds == 0 || before.Tasks != 1 {
		t.Fatalf("before reuse: %+v: the iterator did not report task %d by its id in this namespace", before, id)
	}
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
		c := spinner(t)
		if c.Process.Pid == int(id) {
			young = c
		} else {
			c.Process.Kill()
			c.Wait()
		}
	}
	time.Sleep(30 * time.Millisecond)
	young.Process.Signal(syscall.SIGSTOP)
	for testproc.State(young.Process.Pid, id) != 'T' {
		time.Sleep(time.Millisecond)
	}
	pt, err := schedstat.Open("/proc", id)
	if err != nil {
		t.Fatal(err)
	}
	own, err := pt.Read(make([]byte, schedstat.BufferSize))
	pt.Close()
	if err != nil {
		t.Fatal(err)
	}

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
}

// TestHandleGoneReal reads a task through a handle after the task is
// reaped: the read is an error for which schedstat.IsGone is true, and the
// handle keeps failing after later reads.
func TestHandleGoneReal(t *testing.T) {
	_, s := open(t, "")
	c := spinner(t)
	if err := s.Read(); err != nil {
		t.Fatal(err)
	}
	h, err := s.Opener().Open(int32(c.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Read(nil); err != nil {
		t.Fatalf("live task: %v", err)
	}
	c.Process.Kill()
	c.Wait()
	for range 2 {
		if err := s.Read(); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Read(nil); !schedstat.IsGone(err) {
			t.Fatalf("reaped task: err %v, want one IsGone reports", err)
		}
	}
	if _, err := s.Opener().Open(int32(c.Process.Pid)); !schedstat.IsGone(err) {
		t.Errorf("open of a reaped task: err %v, want one IsGone reports", err)
	}
}

// spinner starts a single-threaded process that spins until killed.
func spinner(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("/bin/sh", "-c", "while :; do :; done")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Process.Kill()
		c.Wait()
	})
	return c
}
