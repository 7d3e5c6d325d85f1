// Package benchx times passes for benchmarks the way the daemon runs
// them: back to back, and one pass after a sleep, reporting per task the
// wall time, the process's CPU time and the allocations of the pass.
package benchx

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Sleep is how long the daemon-style measurement sleeps before each pass:
// long enough for the kernel and the other processes on the machine to
// push the pass's data out of the caches, as a 1 s interval does.
const Sleep = 100 * time.Millisecond

// Mode is a way of timing a pass.
type Mode struct {
	Name  string
	Sleep time.Duration
}

// Modes returns back to back, and one pass after Sleep.
func Modes() []Mode {
	return []Mode{{"back-to-back", 0}, {fmt.Sprintf("after-%v", Sleep), Sleep}}
}

// CPUNow returns the CPU time the process has used, in user and system
// mode, on all its threads (GC workers included), to the nanosecond.
func CPUNow() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return time.Duration(ts.Nano())
}

// Measure runs pass in b.Loop, each time after m.Sleep, and reports per
// task of the pass: ns/task (wall time of the pass, without the sleep),
// cpu-ns/task (the process's CPU time during the pass) and allocs/task.
// When m sleeps, ns/op includes the sleep; the per-task figures never do.
func Measure(b *testing.B, m Mode, tasks int, pass func()) {
	b.Helper()
	if tasks <= 0 {
		b.Fatalf("a pass over %d tasks", tasks)
	}
	var ms0, ms1 runtime.MemStats
	var cpu, wall time.Duration
	if m.Sleep > 0 {
		// A goroutine's first sleep allocates its timer: not the pass's.
		time.Sleep(time.Nanosecond)
	}
	runtime.GC()
	b.ReportAllocs()
	runtime.ReadMemStats(&ms0)
	for b.Loop() {
		if m.Sleep > 0 {
			time.Sleep(m.Sleep)
		}
		c0, w0 := CPUNow(), time.Now()
		pass()
		wall += time.Since(w0)
		cpu += CPUNow() - c0
	}
	runtime.ReadMemStats(&ms1)
	per := float64(b.N) * float64(tasks)
	b.ReportMetric(float64(wall.Nanoseconds())/per, "ns/task")
	b.ReportMetric(float64(cpu.Nanoseconds())/per, "cpu-ns/task")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/per, "allocs/task")
	b.ReportMetric(float64(tasks), "tasks")
}

// EachMode measures pass in every mode, as a sub-benchmark of b each.
func EachMode(b *testing.B, tasks int, pass func()) {
	for _, m := range Modes() {
		b.Run(m.Name, func(b *testing.B) { Measure(b, m, tasks, pass) })
	}
}

// HeapAfterGC returns the bytes of live heap objects, after two
// collections (the second frees what the first's finalizers let go).
func HeapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
