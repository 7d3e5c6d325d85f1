// Package testproc starts real helper processes for tests and benchmarks:
// the test binary re-executed with a number of threads that spin on a CPU
// until told to exit (Start, StartIn), or that sleep for the life of the
// process (StartSleepers), or that churn short-lived threads and processes
// (StartChurnIn). Call Main from TestMain so the re-executed binary
// becomes the helper instead of running tests.
package testproc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	envMode     = "SCHEDSTATD_TESTPROC_THREADS"
	envSleepers = "SCHEDSTATD_TESTPROC_SLEEPERS"
	envChurn    = "SCHEDSTATD_TESTPROC_CHURN"
	// envName, if set, names a helper's spinning threads: the name and
	// the thread's number from 0.
	envName = "SCHEDSTATD_TESTPROC_NAME"
)

// In a helper, the main goroutine keeps the main thread, so no worker runs
// on the thread group leader: workers can then exit while the process
// lives on. Package initialisation runs on the main thread.
func init() {
	if os.Getenv(envMode) != "" || os.Getenv(envShortLived) != "" {
		runtime.LockOSThread()
	}
}

// Main turns the process into a helper when it was started by Start,
// StartIn, StartSleepers, StartChurnIn or StartShortLived, and returns
// otherwise. Call it
// first in TestMain.
func Main() {
	shortLivedMain()
	if os.Getenv(envChurn) != "" {
		churn()
		os.Exit(0)
	}
	for env, run := range map[string]func(int){envMode: helper, envSleepers: sleepers} {
		s := os.Getenv(env)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			fmt.Fprintf(os.Stderr, "testproc: %s=%q is not a thread count\n", env, s)
			os.Exit(2)
		}
		run(n)
		os.Exit(0)
	}
}

// helper starts n threads that spin until a byte arrives on stdin, prints
// their ids, and exits when stdin closes. Each worker stays locked to its
// thread when it returns, so the Go runtime ends the thread with it.
func helper(n int) {
	type worker struct{ i, tid int }
	tids := make(chan worker, n)
	release := make(chan struct{})
	name := os.Getenv(envName)
	for i := range n {
		go func() {
			runtime.LockOSThread()
			if name != "" {
				// A thread may rename the threads of its own process only.
				os.WriteFile(fmt.Sprintf("/proc/self/task/%d/comm", unix.Gettid()), []byte(name+strconv.Itoa(i)), 0)
			}
			tids <- worker{i, unix.Gettid()}
			for {
				select {
				case <-release:
					return
				default:
					for i := 0; i < 100000; i++ {
					}
				}
			}
		}()
	}
	// In the workers' order, so Workers[i] is the thread named name+i.
	ids := make([]string, n)
	for range ids {
		w := <-tids
		ids[w.i] = strconv.Itoa(w.tid)
	}
	fmt.Println("tids", strings.Join(ids, " "))
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadByte(); err != nil {
		return
	}
	close(release)
	io.Copy(io.Discard, in)
}

// Proc is a running helper process.
type Proc struct {
	Cmd *exec.Cmd
	// PID is the process id; Workers are the ids of its spinning or
	// sleeping threads, not of its runtime's.
	PID     int
	Workers []int32
	stdin   io.WriteCloser
	done    chan struct{}
}

// Start starts a helper with the given number of spinning threads and
// waits until they all run. The process is killed and reaped when the test
// ends. attr, if not nil, is used as the command's SysProcAttr.
func Start(t testing.TB, threads int, attr *syscall.SysProcAttr) *Proc {
	t.Helper()
	return start(t, exec.Command(os.Args[0], "-test.run=^$"), envMode, threads, attr)
}

// StartIn is Start with the helper in the cgroup at dir from its first
// instruction, so the cgroup's own CPU counter sees all of the helper's
// time: a cgroup2 cgroup takes it at clone (CLONE_INTO_CGROUP, Linux 5.7+);
// into a v1 one a shell moves itself and then executes the helper, and the
// shell's start-up before the move is in the helper's counters but not in
// the cgroup's.
func StartIn(t testing.TB, threads int, dir string) *Proc {
	t.Helper()
	return StartNamedIn(t, threads, dir, "")
}

// StartNamedIn is StartIn with the spinning threads named name0, name1,
// ... (their comm, at most 15 bytes), unless name is empty.
func StartNamedIn(t testing.TB, threads int, dir, name string) *Proc {
	t.Helper()
	env := os.Environ()
	if name != "" {
		env = append(env, envName+"="+name)
	}
	if fd, ok := Cgroup2FD(t, dir); ok {
		defer unix.Close(fd)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = env
		return start(t, cmd, envMode, threads, &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd})
	}
	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$SCHEDSTATD_TESTPROC_CGROUP/cgroup.procs" && exec "$0" -test.run='^$'`, os.Args[0])
	cmd.Env = append(env, "SCHEDSTATD_TESTPROC_CGROUP="+dir)
	return start(t, cmd, envMode, threads, nil)
}

// Cgroup2FD opens dir for CLONE_INTO_CGROUP when it is a cgroup2 cgroup,
// and says whether it is; the caller closes the fd once the child runs.
func Cgroup2FD(t testing.TB, dir string) (int, bool) {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		return -1, false
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fd, true
}

// start runs cmd as the helper that env names, with the given number of
// threads, and reads the ids of those threads from its first line.
func start(t testing.TB, cmd *exec.Cmd, env string, threads int, attr *syscall.SysProcAttr) *Proc {
	t.Helper()
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, env+"="+strconv.Itoa(threads))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = attr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	p := &Proc{Cmd: cmd, PID: cmd.Process.Pid, stdin: stdin, done: make(chan struct{})}
	t.Cleanup(p.Kill)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("helper %d with %d threads: %v", p.PID, threads, err)
	}
	fields := strings.Fields(line)
	if len(fields) != threads+1 || fields[0] != "tids" {
		t.Fatalf("helper %d printed %d fields for %d threads", p.PID, len(fields), threads)
	}
	p.Workers = make([]int32, threads)
	for i, f := range fields[1:] {
		id, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("helper %d printed thread id %q", p.PID, f)
		}
		p.Workers[i] = int32(id)
	}
	return p
}

// Release tells the workers to exit and waits until their threads are gone.
func (p *Proc) Release(t testing.TB) {
	t.Helper()
	if _, err := p.stdin.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, tid := range p.Workers {
		for {
			_, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d", p.PID, tid))
			if os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("thread %d of %d did not exit", tid, p.PID)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// Cont resumes a stopped process.
func (p *Proc) Cont(t testing.TB) {
	t.Helper()
	p.Signal(t, syscall.SIGCONT)
}

// Signal sends sig to the process.
func (p *Proc) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(p.PID, sig); err != nil {
		t.Fatal(err)
	}
}

// Stop stops every thread with SIGSTOP and waits until all are stopped, so
// their counters hold still.
func (p *Proc) Stop(t testing.TB) {
	t.Helper()
	p.Signal(t, syscall.SIGSTOP)
	WaitStopped(t, p.PID)
}

// WaitStopped waits until every thread of process pid, sent SIGSTOP, is
// stopped and off its CPU: its counters then hold still.
func WaitStopped(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tids := waitThreadsStopped(t, pid, deadline)
	// A thread shows T before its last switch away, which adds its last
	// stretch of run time: under software emulation milliseconds later.
	// It is off its CPU once its run time holds still across ticks.
	for prev := runTimes(pid, tids); ; {
		time.Sleep(10 * time.Millisecond)
		now := runTimes(pid, tids)
		if slices.Equal(prev, now) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads of %d stopped but still ran", pid)
		}
		prev = now
	}
}

// waitThreadsStopped waits until every thread of process pid, sent
// SIGSTOP, shows state T or is gone, and returns the threads it listed. A
// thread already on its way out when the signal came exits instead of
// stopping; a thread made after it joins the stop (the kernel's group stop)
// and needs no wait of its own.
func waitThreadsStopped(t testing.TB, pid int, deadline time.Time) []int32 {
	t.Helper()
	tids := Threads(t, pid)
	for _, tid := range tids {
		for {
			s, err := state(pid, tid)
			if s == 'T' || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("thread %d of %d did not stop: state %q (%v)", tid, pid, s, err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return tids
}

// runTimes returns the run time field of each of tids' schedstat, "" for
// one that cannot be read.
func runTimes(pid int, tids []int32) []string {
	out := make([]string, len(tids))
	for i, tid := range tids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, tid))
		out[i], _, _ = strings.Cut(string(b), " ")
	}
	return out
}

// Threads returns the ids of all the process's threads now.
func (p *Proc) Threads(t testing.TB) []int32 {
	t.Helper()
	return Threads(t, p.PID)
}

// Threads returns the ids of all the threads of any process pid now, the
// test's own for one, from /proc/<pid>/task, in no numeric order.
func Threads(t testing.TB, pid int) []int32 {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var tids []int32
	for _, e := range ents {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		tids = append(tids, int32(id))
	}
	return tids
}

// Kill kills and reaps the process; calling it again does nothing.
func (p *Proc) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	close(p.done)
	p.stdin.Close()
	p.Cmd.Process.Kill()
	p.Cmd.Wait()
}

// State returns the state letter of /proc/<pid>/task/<tid>/stat ('R',
// 'S', 'T', 'Z', ...), or 0 if it cannot be read.
func State(pid int, tid int32) byte {
	s, _ := state(pid, tid)
	return s
}

// state returns the thread's state letter, or 0 and the error that kept it
// from being read.
func state(pid int, tid int32) (byte, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0, fmt.Errorf("/proc/%d/task/%d/stat: no state in %q", pid, tid, b)
	}
	return b[i+2], nil
}

// Spin starts a single-threaded process, a shell loop, that spins until
// killed. Unless the test reaps it first, it is killed and reaped when t
// ends; os.Process never signals a process it has reaped, so a reused id
// is safe.
func Spin(t testing.TB) *exec.Cmd {
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
