package testproc

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// runtimeThreads is room for the Go runtime's own threads above the
// sleepers, for debug.SetMaxThreads.
const runtimeThreads = 1000

// StartSleepers starts a helper with n threads that sleep, blocked, for
// the life of the process, and returns once every one of them exists; its
// Workers are their ids. An idle thread is what most threads on a node
// are, and its counters hold still, so reading it measures the read and
// nothing else: benchmarks use these. The process is killed and reaped
// when tb ends, pass or fail; if the test binary dies first, the helper
// sees its stdin close and exits.
func StartSleepers(tb testing.TB, n int) *Proc {
	tb.Helper()
	return start(tb, exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$"), envSleepers, n, nil)
}

// sleepers starts n threads, each a goroutine locked to its own thread and
// blocked on a channel that is never closed, prints their ids on one line,
// and exits when stdin reaches its end: when the parent closes it or dies.
func sleepers(n int) {
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
