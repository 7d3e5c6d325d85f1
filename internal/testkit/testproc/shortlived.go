package testproc

// Short-lived tasks for tests of exit accounting: the test binary
// re-executed as a helper that starts many threads or many processes,
// each of which burns a set amount of CPU time and exits (StartShortLived).

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

const envShortLived = "SCHEDSTATD_CHURN"

// noRaceSleep stops a race-enabled helper from sleeping a second at exit.
const noRaceSleep = "GORACE=atexit_sleep_ms=0"

// shortLivedMain runs the helper of StartShortLived, if this process is
// one, and exits; it returns otherwise.
func shortLivedMain() {
	s := os.Getenv(envShortLived)
	if s == "" {
		return
	}
	if err := shortLived(strings.Fields(s)); err != nil {
		fmt.Fprintln(os.Stderr, "testproc:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// shortLived runs one of:
//
//	threads N D P   N threads, P at a time, each burning D of CPU and exiting
//	procs N D P     N processes, P at a time, each burning D of CPU and exiting
//	spin D          burn D of CPU on the main thread and exit
//	execs N P       N runs of /bin/true, P at a time: processes as short
//	                as a process gets (an exec probe), without a Go
//	                runtime's start-up
//
// threads prints the ids of the threads it ran.
func shortLived(args []string) error {
	if len(args) == 2 && args[0] == "spin" {
		d, err := time.ParseDuration(args[1])
		if err != nil {
			return err
		}
		Burn(d)
		return nil
	}
	if len(args) == 3 && args[0] == "execs" {
		n, err1 := strconv.Atoi(args[1])
		p, err2 := strconv.Atoi(args[2])
		if err1 != nil || err2 != nil || p < 1 {
			return fmt.Errorf("bad mode %q", args)
		}
		return runExecs(n, p)
	}
	if len(args) != 4 {
		return fmt.Errorf("bad mode %q", args)
	}
	n, err1 := strconv.Atoi(args[1])
	d, err2 := time.ParseDuration(args[2])
	p, err3 := strconv.Atoi(args[3])
	if err1 != nil || err2 != nil || err3 != nil || p < 1 {
		return fmt.Errorf("bad mode %q", args)
	}
	switch args[0] {
	case "threads":
		fmt.Println("tids", strings.Join(burnThreads(n, d, p), " "))
		return nil
	case "procs":
		return burnProcs(n, d, p)
	}
	return fmt.Errorf("bad mode %q", args)
}

// burnThreads runs n threads, p at a time. Each worker locks its thread and
// returns locked, so the Go runtime ends the thread with it.
func burnThreads(n int, d time.Duration, p int) []string {
	tids := make(chan int, n)
	atMost(n, p, func() error {
		runtime.LockOSThread()
		tids <- unix.Gettid()
		Burn(d)
		return nil
	})
	close(tids)
	var ids []string
	for id := range tids {
		ids = append(ids, strconv.Itoa(id))
	}
	return ids
}

// burnProcs runs n processes of "spin d", p at a time.
func burnProcs(n int, d time.Duration, p int) error {
	return atMost(n, p, func() error {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envShortLived+"=spin "+d.String(), noRaceSleep)
		cmd.Stderr = os.Stderr
		return cmd.Run()
	})
}

// runExecs runs /bin/true n times, p at a time.
func runExecs(n, p int) error {
	return atMost(n, p, func() error { return exec.Command("/bin/true").Run() })
}

// atMost calls run n times, each in a goroutine of its own, p at a time,
// and returns the first error.
func atMost(n, p int, run func() error) error {
	var g errgroup.Group
	g.SetLimit(p)
	for range n {
		g.Go(run)
	}
	return g.Wait()
}

// Burn spins on the calling thread until it has used d of CPU time.
func Burn(d time.Duration) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return
	}
	end := ts.Nano() + d.Nanoseconds()
	for ts.Nano() < end {
		for i := 0; i < 20000; i++ {
		}
		if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
			return
		}
	}
}
