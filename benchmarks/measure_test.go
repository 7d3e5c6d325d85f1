package benchmarks_test

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/sleepers"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	sleepers.Main()
	os.Exit(m.Run())
}

// sleep is how long the daemon-style measurement sleeps before each pass:
// long enough for the kernel and the other processes on the machine to
// push the pass's data out of the caches, as a 1 s interval does.
const sleep = 100 * time.Millisecond

// mode is a way of timing a pass.
type mode struct {
	name  string
	sleep time.Duration
}

// modes are back to back, and one pass after a sleep.
var modes = []mode{
	{"back-to-back", 0},
	{fmt.Sprintf("after-%v", sleep), sleep},
}

// cpuNow returns the CPU time the process has used, in user and system
// mode, on all its threads (GC workers included), to the nanosecond.
func cpuNow() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return time.Duration(ts.Nano())
}

// measure runs pass in b.Loop, each time after m.sleep, and reports per
// task of the pass: ns/task (wall time of the pass, without the sleep),
// cpu-ns/task (the process's CPU time during the pass) and allocs/task.
// When m sleeps, ns/op includes the sleep; the per-task figures never do.
func measure(b *testing.B, m mode, tasks int, pass func()) {
	b.Helper()
	if tasks <= 0 {
		b.Fatalf("a pass over %d tasks", tasks)
	}
	var ms0, ms1 runtime.MemStats
	var cpu, wall time.Duration
	if m.sleep > 0 {
		// A goroutine's first sleep allocates its timer: not the pass's.
		time.Sleep(time.Nanosecond)
	}
	runtime.GC()
	b.ReportAllocs()
	runtime.ReadMemStats(&ms0)
	for b.Loop() {
		if m.sleep > 0 {
			time.Sleep(m.sleep)
		}
		c0, w0 := cpuNow(), time.Now()
		pass()
		wall += time.Since(w0)
		cpu += cpuNow() - c0
	}
	runtime.ReadMemStats(&ms1)
	per := float64(b.N) * float64(tasks)
	b.ReportMetric(float64(wall.Nanoseconds())/per, "ns/task")
	b.ReportMetric(float64(cpu.Nanoseconds())/per, "cpu-ns/task")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/per, "allocs/task")
	b.ReportMetric(float64(tasks), "tasks")
}

// raiseNoFile raises the open file limit to at least n; the table keeps an
// fd per task. Raising the hard limit needs root.
func raiseNoFile(tb testing.TB, n uint64) {
	tb.Helper()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	want := unix.Rlimit{Cur: n, Max: max(n, lim.Max)}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err != nil {
		tb.Fatalf("raise RLIMIT_NOFILE from %d/%d to %d: %v", lim.Cur, lim.Max, n, err)
	}
}

// fdReserve is how many fds, beyond one per task, a benchmark process
// needs: its standard files and pipes, the runtime's, the walker's, and
// the helper's runtime threads, which are tasks too.
const fdReserve = 128

// fitThreads returns how many helper threads a benchmark that keeps one fd
// per thread may start: want, with the open file limit raised to fit, or,
// where the hard limit cannot be raised (raising it needs
// CAP_SYS_RESOURCE), as many hundreds as fit under it.
func fitThreads(tb testing.TB, want int) int {
	tb.Helper()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	need := uint64(want + fdReserve)
	if lim.Cur >= need {
		return want
	}
	if lim.Max >= need || unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: need, Max: need}) == nil {
		raiseNoFile(tb, need)
		return want
	}
	raiseNoFile(tb, lim.Max)
	fit := (int(lim.Max) - fdReserve) / 100 * 100
	tb.Logf("RLIMIT_NOFILE hard limit %d cannot be raised: %d threads instead of %d", lim.Max, fit, want)
	return fit
}

// heapAfterGC returns the bytes of live heap objects.
func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
