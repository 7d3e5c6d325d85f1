package procsource_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/schedstat"
)

// openSelf locks the calling goroutine to its thread for the rest of the
// test and opens that thread's schedstat.
func openSelf(t testing.TB) (*procsource.Task, int) {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	tid := unix.Gettid()
	task, err := procsource.Open("/proc", int32(tid))
	if err != nil {
		t.Fatalf("Open(/proc, %d): %v", tid, err)
	}
	t.Cleanup(func() { task.Close() })
	return task, tid
}

func TestOpenSelfStartTime(t *testing.T) {
	task, tid := openSelf(t)
	if task.TID() != int32(tid) {
		t.Errorf("TID() = %d, want %d", task.TID(), tid)
	}
	// prometheus/procfs reads the same field on its own.
	fs, err := procfs.NewFS("/proc")
	if err != nil {
		t.Fatal(err)
	}
	thread, err := fs.Thread(os.Getpid(), tid)
	if err != nil {
		t.Fatal(err)
	}
	st, err := thread.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if want := st.Starttime; task.StartTime() != want {
		t.Errorf("StartTime() = %d, want procfs's %d", task.StartTime(), want)
	}
	if task.StartTime() == 0 {
		t.Errorf("StartTime() = 0 for a thread started after boot")
	}
}

// threadCPU returns the CPU time the calling thread has used.
func threadCPU(t testing.TB) time.Duration {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

func TestReadIncreasesWhileSpinning(t *testing.T) {
	task, _ := openSelf(t)
	before, err := task.Read()
	if err != nil {
		t.Fatal(err)
	}

	const spin = 20 * time.Millisecond
	start := threadCPU(t)
	deadline := time.Now().Add(10 * time.Second)
	for threadCPU(t)-start < spin {
		if time.Now().After(deadline) {
			t.Fatalf("thread got less than %v of CPU in 10s", spin)
		}
	}

	after, err := task.Read()
	if err != nil {
		t.Fatal(err)
	}
	if !before.AtMost(after) {
		t.Fatalf("counters went backwards: %+v then %+v", before, after)
	}
	// The kernel folds a running task's time into sum_exec_runtime at
	// ticks and switches, so the reading may lag by up to a tick.
	const slack = 10 * time.Millisecond
	if ran := time.Duration(after.RunNanoseconds - before.RunNanoseconds); ran < spin-slack {
		t.Errorf("RunNanoseconds rose by %v over %v of spinning (%+v then %+v)", ran, spin, before, after)
	}
}

// startSleeper starts a child process that sleeps until killed. The test's
// cleanup kills and reaps it if the test did not.
func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatalf("need a sleep binary to run a child task: %v", err)
	}
	cmd := exec.Command(path, "100")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd
}

func TestReadReapedChild(t *testing.T) {
	cmd := startSleeper(t)
	pid := int32(cmd.Process.Pid)
	task, err := procsource.Open("/proc", pid)
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close()
	if _, err := task.Read(); err != nil {
		t.Fatalf("Read of a live child: %v", err)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	got, err := task.Read()
	if err == nil {
		t.Fatalf("Read after the child was reaped = %+v, want an error", got)
	}
	if !errors.Is(err, unix.ESRCH) {
		t.Errorf("Read after reap: %v, want ESRCH", err)
	}
	if !schedstat.IsGone(err) {
		t.Errorf("IsGone(%v) = false after reap", err)
	}
	// A reaped task's id is free; unless it was reused at once, opening it
	// again fails as gone too.
	if again, err := procsource.Open("/proc", pid); err == nil {
		again.Close()
		t.Logf("pid %d was reused right away", pid)
	} else if !schedstat.IsGone(err) {
		t.Errorf("Open of reaped pid %d: %v, want IsGone", pid, err)
	}
}

func TestOpenNonexistentTID(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	pidMax, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	tid := int32(pidMax) + 1
	task, err := procsource.Open("/proc", tid)
	if err == nil {
		task.Close()
		t.Fatalf("Open(/proc, %d) above pid_max succeeded", tid)
	}
	if !errors.Is(err, unix.ENOENT) || !schedstat.IsGone(err) {
		t.Errorf("Open(/proc, %d) = %v, want ENOENT and IsGone", tid, err)
	}
}

// waitState polls /proc/<pid>/stat until the task's state is want.
func waitState(t *testing.T, pid int, want byte) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		i := strings.LastIndexByte(string(b), ')')
		if i >= 0 && i+2 < len(b) && b[i+2] == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not reach state %c in 10s: %q", pid, want, b)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestReadZombie(t *testing.T) {
	cmd := startSleeper(t)
	pid := cmd.Process.Pid
	task, err := procsource.Open("/proc", int32(pid))
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close()
	alive, err := task.Read()
	if err != nil {
		t.Fatal(err)
	}

	// Kill without reaping: the child stays a zombie until cmd.Wait.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, 'Z')

	// The task shows Z before its last switch away (exit_notify comes
	// before the final schedule, which on a loaded machine can be
	// milliseconds later): read until its counters hold still, then they
	// must stay.
	first, err := task.Read()
	if err != nil {
		t.Fatalf("Read of a zombie: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		time.Sleep(50 * time.Millisecond)
		next, err := task.Read()
		if err != nil {
			t.Fatalf("Read of a zombie: %v", err)
		}
		if next == first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("zombie's counters still change after 5s: %+v then %+v", first, next)
		}
		first = next
	}
	if !alive.AtMost(first) {
		t.Errorf("zombie's counters %+v below the live reading %+v", first, alive)
	}
	time.Sleep(50 * time.Millisecond)
	second, err := task.Read()
	if err != nil {
		t.Fatalf("second Read of a zombie: %v", err)
	}
	if second != first {
		t.Errorf("zombie's counters changed once they held still: %+v then %+v", first, second)
	}

	// A zombie can still be opened, and it is the same task.
	again, err := procsource.Open("/proc", int32(pid))
	if err != nil {
		t.Fatalf("Open of a zombie: %v", err)
	}
	defer again.Close()
	if again.StartTime() != task.StartTime() {
		t.Errorf("zombie's StartTime() = %d, it was %d while alive", again.StartTime(), task.StartTime())
	}
	if got, err := again.Read(); err != nil || got != first {
		t.Errorf("Read of the zombie through a new handle = %+v, %v; want %+v", got, err, first)
	}

	cmd.Wait()
	if got, err := task.Read(); !schedstat.IsGone(err) {
		t.Errorf("Read after reaping the zombie = %+v, %v; want an error for which IsGone is true", got, err)
	}
}

// TestReadExitedThread reads a thread of this process that exits: Go ends
// a thread whose goroutine returns while locked to it, unless it is the
// main thread, and the kernel reaps a non-leader thread itself.
func TestReadExitedThread(t *testing.T) {
	pid := unix.Getpid()
	tids := make(chan int)
	exit := make(chan struct{})
	tid := pid
	// The first goroutine may land on the main thread, which Go parks
	// instead of ending; while it holds that thread, the next cannot.
	for range 3 {
		go func() {
			runtime.LockOSThread()
			tid := unix.Gettid()
			tids <- tid
			<-exit
			if tid == pid {
				runtime.UnlockOSThread()
			}
		}()
		if tid = <-tids; tid != pid {
			break
		}
	}
	if tid == pid {
		close(exit)
		t.Fatal("could not get a goroutine onto a thread other than the main one")
	}
	task, err := procsource.Open("/proc", int32(tid))
	if err != nil {
		close(exit)
		t.Fatal(err)
	}
	defer task.Close()
	if _, err := task.Read(); err != nil {
		t.Fatalf("Read of a live thread: %v", err)
	}
	close(exit)

	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := task.Read()
		if err != nil {
			if !errors.Is(err, unix.ESRCH) || !schedstat.IsGone(err) {
				t.Fatalf("Read after the thread exited: %v, want ESRCH and IsGone", err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d still readable 10s after its goroutine returned", tid)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCloseTwice(t *testing.T) {
	fds := openFDs(t)
	task, _ := openSelf(t)
	if got := openFDs(t); got != fds+1 {
		t.Errorf("Open left %d fds open, want %d", got, fds+1)
	}
	if err := task.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if got := openFDs(t); got != fds {
		t.Errorf("after Close %d fds are open, want %d", got, fds)
	}
	if err := task.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// The second Close must not close some other file that took the fd.
	f, err := os.Open("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := task.Close(); err != nil {
		t.Errorf("third Close: %v", err)
	}
	if _, err := f.Stat(); err != nil {
		t.Errorf("a file opened after Close was closed by a later Close: %v", err)
	}
	if got, err := task.Read(); err == nil || schedstat.IsGone(err) {
		t.Errorf("Read after Close = %+v, %v; want an error for which IsGone is false", got, err)
	}
}

// TestOpenPermissionDenied makes a real EACCES: a fake task whose stat is
// mode 0. As root, the test drops its file-system uid on one locked thread,
// which also drops CAP_DAC_OVERRIDE for that thread.
func TestOpenPermissionDenied(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "7")
	own := filepath.Join(dir, "task", "7") // the thread's own stat
	if err := os.MkdirAll(own, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(root), root, dir, filepath.Dir(own)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stat, err := os.ReadFile("../test/fixtures/schedstat/sleep.stat")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(own, "stat"), stat, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "schedstat"), []byte("1 2 3\n"), 0o444); err != nil {
		t.Fatal(err)
	}

	errs := make(chan error, 1)
	go func() {
		// Never unlocked: the thread's credentials are changed, so Go ends
		// the thread when this goroutine returns.
		runtime.LockOSThread()
		if os.Geteuid() == 0 {
			if err := unix.Setfsuid(65534); err != nil {
				errs <- err
				return
			}
		}
		task, err := procsource.Open(root, 7)
		if err == nil {
			task.Close()
		}
		errs <- err
	}()
	err = <-errs
	if err == nil {
		e2e.Unavailable(t, "cannot make a file unreadable for this process")
	}
	if !errors.Is(err, unix.EACCES) {
		t.Fatalf("Open of an unreadable stat = %v, want EACCES", err)
	}
	if !strings.Contains(err.Error(), filepath.Join(dir, "task", "7", "stat")) {
		t.Errorf("Open error %q does not name the unreadable file", err)
	}
	if schedstat.IsGone(err) {
		t.Errorf("IsGone(%v) = true for EACCES", err)
	}
}

func TestReadAllocs(t *testing.T) {
	task, _ := openSelf(t)
	var (
		s   schedstat.Stat
		err error
	)
	allocs := testing.AllocsPerRun(1000, func() {
		s, err = task.Read()
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.RunNanoseconds == 0 {
		t.Fatalf("Read of this running thread = %+v", s)
	}
	if allocs != 0 {
		t.Errorf("Read allocates %v times per call, want 0", allocs)
	}
}
