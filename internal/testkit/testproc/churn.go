package testproc

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// churn starts short-lived threads and processes until stdin closes: every
// 2 ms a thread that spins for about a millisecond and exits, and every
// 20 ms a shell that counts to 200 and exits.
func churn() {
	stop := make(chan struct{})
	go func() {
		bufio.NewReader(os.Stdin).ReadByte()
		close(stop)
	}()
	threads := time.NewTicker(2 * time.Millisecond)
	procs := time.NewTicker(20 * time.Millisecond)
	sem := make(chan struct{}, 8)
	for {
		select {
		case <-stop:
			return
		case <-threads.C:
			select {
			case sem <- struct{}{}:
			default:
				continue
			}
			go func() {
				runtime.LockOSThread() // the thread ends with the goroutine
				defer func() { <-sem }()
				for end := time.Now().Add(time.Millisecond); time.Now().Before(end); {
				}
			}()
		case <-procs.C:
			exec.Command("/bin/sh", "-c", "i=0; while [ $i -lt 200 ]; do i=$((i+1)); done").Run()
		}
	}
}

// StartChurnIn starts a process in the cgroup at dir that churns threads
// and processes until Stop is called or the test ends.
func StartChurnIn(t testing.TB, dir string) *Churner {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$SCHEDSTATD_TESTPROC_CGROUP/cgroup.procs" && exec "$0" -test.run='^$'`, os.Args[0])
	cmd.Env = append(os.Environ(), "SCHEDSTATD_TESTPROC_CGROUP="+dir, envChurn+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Churner{cmd: cmd, stdin: stdin}
	t.Cleanup(c.Stop)
	return c
}

// Churner is a running churn process.
type Churner struct {
	cmd   *exec.Cmd
	stdin interface{ Close() error }
	done  bool
}

// PID returns the churn process's id.
func (c *Churner) PID() int { return c.cmd.Process.Pid }

// Pause stops the churn process with SIGSTOP, waits until it is stopped
// and then for the short processes it had started to end: the cgroup's
// counters then hold still. Resume goes on.
func (c *Churner) Pause(t testing.TB) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitThreadsStopped(t, c.cmd.Process.Pid, time.Now().Add(10*time.Second))
	// Its short shells run a few milliseconds; under load, give them more.
	time.Sleep(200 * time.Millisecond)
}

// Resume resumes a paused churn.
func (c *Churner) Resume(t testing.TB) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// Stop ends the churn and reaps the process.
func (c *Churner) Stop() {
	if c.done {
		return
	}
	c.done = true
	c.stdin.Close()
	timer := time.AfterFunc(5*time.Second, func() { c.cmd.Process.Signal(syscall.SIGKILL) })
	c.cmd.Wait()
	timer.Stop()
}
