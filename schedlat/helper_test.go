package schedlat

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// envLatency makes the test binary a latency-sensitive helper: one thread
// that sleeps 1 ms and spins for the duration the variable holds, over and
// over.
const envLatency = "SCHEDLAT_TEST_LATENCY"

// envExit makes the test binary the exit helper: one thread that, once a
// line comes on stdin, prints its own schedstat, sleeps 50 us as many
// times as the variable says, prints its schedstat again and exits, while
// the process stays.
const envExit = "SCHEDLAT_TEST_EXIT"

// exitHelper turns the process into the exit helper when asked.
func exitHelper() {
	if os.Getenv(envExit) == "" {
		return
	}
	n, err := strconv.Atoi(os.Getenv(envExit))
	if err != nil {
		fmt.Fprintf(os.Stderr, "exit helper: %s=%q: %v\n", envExit, os.Getenv(envExit), err)
		os.Exit(2)
	}
	// The main thread stays with this goroutine: Go never ends it, so
	// the worker must be another.
	runtime.LockOSThread()
	in := bufio.NewReader(os.Stdin)
	done := make(chan struct{})
	go func() {
		// Locked and never unlocked: the thread exits with the goroutine.
		runtime.LockOSThread()
		defer close(done)
		fmt.Println("tid", unix.Gettid())
		if _, err := in.ReadString('\n'); err != nil {
			os.Exit(2)
		}
		stat := func(name string) {
			b, err := os.ReadFile("/proc/thread-self/schedstat")
			if err != nil {
				fmt.Fprintln(os.Stderr, "exit helper:", err)
				os.Exit(2)
			}
			fmt.Print(name, " ", string(b))
		}
		stat("start")
		nap := unix.Timespec{Nsec: 50_000}
		for range n {
			unix.Nanosleep(&nap, nil)
		}
		stat("end")
	}()
	<-done
	io.Copy(io.Discard, in)
	os.Exit(0)
}

// latencyHelper turns the process into the latency helper when asked: it
// prints its worker's tid, then sleeps 1 ms and spins a burst until stdin
// closes.
func latencyHelper() {
	if os.Getenv(envLatency) == "" {
		return
	}
	burst, err := time.ParseDuration(os.Getenv(envLatency))
	if err != nil {
		fmt.Fprintf(os.Stderr, "latency helper: %s=%q: %v\n", envLatency, os.Getenv(envLatency), err)
		os.Exit(2)
	}
	runtime.LockOSThread()
	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	fmt.Println("tid", unix.Gettid())
	nap := unix.Timespec{Nsec: 1e6}
	for {
		select {
		case <-stop:
			os.Exit(0)
		default:
		}
		unix.Nanosleep(&nap, nil)
		end := time.Now().Add(burst)
		for time.Now().Before(end) {
		}
	}
}

// startHelper starts this test binary as the helper that env=value makes
// it, killed when t ends, and returns the process, its stdin and its
// stdout, read by lines.
func startHelper(t testing.TB, env, value string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+value)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, in, bufio.NewReader(out)
}

// startLatency starts the latency helper with bursts of burst, killed
// when t ends, and returns its process and its worker's tid.
func startLatency(t testing.TB, burst time.Duration) (*exec.Cmd, int) {
	t.Helper()
	cmd, _, out := startHelper(t, envLatency, burst.String())
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("latency helper: %v", err)
	}
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "tid" {
		t.Fatalf("latency helper printed %q", line)
	}
	tid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return cmd, tid
}

// pin binds the thread tid to cpu.
func pin(t testing.TB, tid, cpu int) {
	t.Helper()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(tid, &set); err != nil {
		t.Fatalf("pin %d to CPU %d: %v", tid, cpu, err)
	}
}
