package testproc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ShortLived is a running helper of short-lived tasks.
type ShortLived struct {
	mode string
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan error
}

// StartShortLived starts a helper in mode (see the modes of shortLived: "threads 1500 4ms
// 4", "procs 200 10ms 2", "spin 10ms") inside every cgroup in dirs from
// its first instruction, so each cgroup's own CPU counter sees all of the
// helper's time: a single cgroup2 cgroup takes it at clone; otherwise a
// shell moves itself into each and then executes the helper. The helper and everything it started are killed when the test
// ends.
func StartShortLived(t testing.TB, mode string, dirs ...string) *ShortLived {
	t.Helper()
	script := `for d in "$@"; do echo $$ > "$d/cgroup.procs" || exit 3; done; exec "$0" -test.run='^$'`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, os.Args[0]}, dirs...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// One cgroup2 cgroup takes the helper at clone, without a shell whose
	// start-up the cgroup's counter would miss.
	if len(dirs) == 1 {
		if fd, ok := Cgroup2FD(t, dirs[0]); ok {
			defer unix.Close(fd)
			cmd = exec.Command(os.Args[0], "-test.run=^$")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: fd}
		}
	}
	cmd.Env = append(os.Environ(), envShortLived+"="+mode, noRaceSleep)
	cmd.Stderr = os.Stderr
	p := &ShortLived{mode: mode, cmd: cmd, done: make(chan error, 1)}
	cmd.Stdout = &p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start churn helper: %v", err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(p.kill)
	return p
}

// Wait waits up to timeout for the helper to exit and returns the thread
// ids it printed (threads mode only).
func (p *ShortLived) Wait(t testing.TB, timeout time.Duration) []int32 {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("%v: %v", p, err)
		}
	case <-time.After(timeout):
		t.Fatalf("churn helper still running after %s", timeout)
	}
	var tids []int32
	for _, line := range strings.Split(p.out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "tids" {
			continue
		}
		for _, s := range f[1:] {
			id, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("churn helper said %q", line)
			}
			tids = append(tids, int32(id))
		}
	}
	return tids
}

// Exited reports, without waiting, whether the helper has exited.
func (p *ShortLived) Exited() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

// PID returns the helper's process id.
func (p *ShortLived) PID() int { return p.cmd.Process.Pid }

// kill kills the helper's process group, unless the helper exited by
// itself (it waits for every process it starts), and reaps the helper.
func (p *ShortLived) kill() {
	select {
	case err := <-p.done:
		p.done <- err
		return
	default:
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	err := <-p.done
	p.done <- err
}

// String names the helper for messages.
func (p *ShortLived) String() string { return fmt.Sprintf("churn helper %d (%s)", p.PID(), p.mode) }
