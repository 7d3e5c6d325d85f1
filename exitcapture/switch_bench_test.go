package exitcapture

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"golang.org/x/sys/unix"
)

// pingPong bounces a byte n times between two threads over two pipes, so
// that each round trip switches both threads out and in.
func pingPong(tb testing.TB, n int) {
	var a, c [2]int
	if err := unix.Pipe(a[:]); err != nil {
		tb.Fatal(err)
	}
	if err := unix.Pipe(c[:]); err != nil {
		tb.Fatal(err)
	}
	defer func() {
		for _, fd := range []int{a[0], a[1], c[0], c[1]} {
			unix.Close(fd)
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		buf := make([]byte, 1)
		for range n {
			unix.Read(a[0], buf)
			unix.Write(c[1], buf)
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := []byte{1}
	for range n {
		unix.Write(a[1], buf)
		unix.Read(c[0], buf)
	}
	<-done
}

// progStats enables the kernel's BPF run time statistics for the
// benchmark and returns a reader of prog's count and total time.
func progStats(b *testing.B, prog *ebpf.Program) func() (runs uint64, ns float64) {
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Skipf("no BPF run time statistics: %v", err)
	}
	b.Cleanup(func() { stats.Close() })
	return func() (uint64, float64) {
		st, err := prog.Stats()
		if err != nil {
			b.Fatal(err)
		}
		return st.RunCount, float64(st.Runtime.Nanoseconds())
	}
}

// BenchmarkSwitch measures what the program costs the kernel on ordinary
// context switches. "off" is pipe round trips between two threads with no
// program (ns/op; each round trip is a few switches). "hook=..." attaches
// exit capture at that hook: the kernel's BPF statistics give the
// program's run time over the interval, per round trip (prog-ns/op) and
// per run (prog-runs/op). At sched_process_free the program runs only
// when a task is freed, never on a switch: prog-ns/op is zero but for
// other tasks exiting on the node. At sched_switch it runs on every
// switch (prog-ns/switch); the statistics' own clock reads are in that
// figure, and "empty", a sched_switch program that only returns, shows
// how much. "exits" runs threads that exit at once and reports the
// program's time per record sent (prog-ns/record), the switch hot path's
// share of the same interval taken out. Every switch on the node runs a
// sched_switch program, so the counts include other tasks' switches too.
func BenchmarkSwitch(b *testing.B) {
	b.Run("off", func(b *testing.B) {
		pingPong(b, b.N)
	})
	measure := func(b *testing.B, prog *ebpf.Program) {
		stats := progStats(b, prog)
		runs0, ns0 := stats()
		b.ResetTimer()
		pingPong(b, b.N)
		b.StopTimer()
		runs, ns := stats()
		b.ReportMetric((ns-ns0)/float64(b.N), "prog-ns/op")
		b.ReportMetric(float64(runs-runs0)/float64(b.N), "prog-runs/op")
		if runs > runs0 {
			b.ReportMetric((ns-ns0)/float64(runs-runs0), "prog-ns/run")
		}
	}
	for _, hook := range []Hook{HookFree, HookSwitch} {
		b.Run("hook="+hook.String(), func(b *testing.B) {
			measure(b, openSource(b, Options{Hook: hook}).coll.Programs[progName])
		})
	}
	b.Run("empty", func(b *testing.B) {
		measure(b, attachEmpty(b))
	})
	for _, hook := range []Hook{HookFree, HookSwitch} {
		b.Run("exits/hook="+hook.String(), func(b *testing.B) {
			s := openSource(b, Options{Hook: hook})
			stats := progStats(b, s.coll.Programs[progName])
			runs0, ns0 := stats()
			pingPong(b, 20000)
			runs1, ns1 := stats()
			hot := 0.0
			if runs1 > runs0 {
				hot = (ns1 - ns0) / float64(runs1-runs0)
			}
			events0 := s.Stats().Events
			b.ResetTimer()
			testproc.StartShortLived(b, "threads "+strconv.Itoa(b.N)+" 0s 2").Wait(b, time.Minute)
			b.StopTimer()
			time.Sleep(100 * time.Millisecond) // let the last tasks be freed and read
			runs2, ns2 := stats()
			records := float64(s.Stats().Events - events0)
			b.ReportMetric((ns2-ns1-hot*(float64(runs2-runs1)-records))/records, "prog-ns/record")
			b.ReportMetric(records/float64(b.N), "records/op")
			b.ReportMetric(float64(runs2-runs1)/records, "runs/record")
		})
	}
}

// attachEmpty attaches a sched_switch program that only returns.
func attachEmpty(b *testing.B) *ebpf.Program {
	e2e.RequireRoot(b)
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "schedstatd_nop", Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp,
		AttachTo: "sched_switch", License: license,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		b.Fatal(err)
	}
	l, err := link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceRawTp})
	if err != nil {
		prog.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close(); prog.Close() })
	return prog
}
