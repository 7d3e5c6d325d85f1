// Package sleepers starts helper processes for benchmarks: the test binary
// re-executed with a number of threads that sleep, blocked, for the life of
// the process. An idle thread is what most threads on a node are, and its
// counters hold still, so reading it measures the read and nothing else.
// Call Main from TestMain so the re-executed binary becomes the helper
// instead of running tests or benchmarks.
package sleepers

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const envThreads = "SCHEDSTATD_SLEEPERS_THREADS"

// runtimeThreads is room for the Go runtime's own threads above the
// sleepers, for debug.SetMaxThreads.
const runtimeThreads = 1000

// Main turns the process into a helper when it was started by Start, and
// returns otherwise. Call it first in TestMain.
func Main() {
	s := os.Getenv(envThreads)
	if s == "" {
		return
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		fmt.Fprintln(os.Stderr, "sleepers: bad thread count", s)
		os.Exit(2)
	}
	helper(n)
	os.Exit(0)
}

// helper starts n threads, each a goroutine locked to its own thread and
// blocked on a channel that is never closed, prints their ids on one line,
// and exits when stdin reaches its end: when the parent closes it or dies.
func helper(n int) {
	// The runtime stops at 10,000 threads unless told otherwise.
	debug.SetMaxThreads(n + runtimeThreads)
	tids := make(chan int, n)
	never := make(chan struct{})
	for range n {
		go func() {
			runtime.LockOSThread()
			tids <- unix.Gettid()
			<-never
		}()
	}
	w := bufio.NewWriter(os.Stdout)
	w.WriteString("tids")
	for range n {
		w.WriteByte(' ')
		w.WriteString(strconv.Itoa(<-tids))
	}
	w.WriteByte('\n')
	if err := w.Flush(); err != nil {
		os.Exit(1)
	}
	io.Copy(io.Discard, os.Stdin)
}

// Proc is a running helper process.
type Proc struct {
	// PID is the process id; TIDs are the ids of its sleeping threads,
	// not its runtime threads.
	PID  int
	TIDs []int32

	cmd   *exec.Cmd
	stdin io.Closer
	done  bool
}

// Start starts a helper with n sleeping threads and returns once every one
// of them exists. The process is killed and reaped when tb ends, pass or
// fail; if the test binary dies first, the helper sees its stdin close and
// exits.
func Start(tb testing.TB, n int) *Proc {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), envThreads+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start helper: %v", err)
	}
	p := &Proc{PID: cmd.Process.Pid, cmd: cmd, stdin: stdin}
	tb.Cleanup(p.Kill)
	line, err := bufio.NewReaderSize(stdout, 1<<16).ReadString('\n')
	if err != nil {
		tb.Fatalf("helper %d with %d threads: %v", p.PID, n, err)
	}
	fields := strings.Fields(line)
	if len(fields) != n+1 || fields[0] != "tids" {
		tb.Fatalf("helper %d printed %d fields for %d threads", p.PID, len(fields), n)
	}
	p.TIDs = make([]int32, n)
	for i, f := range fields[1:] {
		id, err := strconv.Atoi(f)
		if err != nil {
			tb.Fatalf("helper %d printed thread id %q", p.PID, f)
		}
		p.TIDs[i] = int32(id)
	}
	return p
}

// Kill kills and reaps the process; calling it again does nothing.
func (p *Proc) Kill() {
	if p.done {
		return
	}
	p.done = true
	p.stdin.Close()
	p.cmd.Process.Kill()
	p.cmd.Wait()
}
