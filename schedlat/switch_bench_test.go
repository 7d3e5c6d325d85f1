package schedlat

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"golang.org/x/sys/unix"
)

// pingPong bounces a byte n times between two threads over two pipes, so
// that each round trip switches both threads out and in. Both threads
// run on the last CPU, so every switch is from one to the other (the
// waker preempted by the woken every other time) whatever the scheduler
// would place where: the mix of switches, and so the mean cost of one,
// is the same from run to run.
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
	var one, all unix.CPUSet
	one.Set(runtime.NumCPU() - 1)
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		tb.Fatal(err)
	}
	// pinned runs f on this goroutine's own thread, bound to one CPU.
	pinned := func(f func()) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			panic(err)
		}
		defer unix.SchedSetaffinity(0, &all)
		f()
	}
	done := make(chan struct{})
	go pinned(func() {
		defer close(done)
		buf := make([]byte, 1)
		for range n {
			unix.Read(a[0], buf)
			unix.Write(c[1], buf)
		}
	})
	pinned(func() {
		buf := []byte{1}
		for range n {
			unix.Write(a[1], buf)
			unix.Read(c[0], buf)
		}
	})
	<-done
}

// progStats enables the kernel's BPF run time statistics
// (kernel.bpf_stats_enabled) for the benchmark and returns a reader of
// prog's run count and total run time.
func progStats(b *testing.B, prog *ebpf.Program) func() (runs uint64, ns float64) {
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Fatalf("no BPF run time statistics: %v", err)
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

// BenchmarkSwitch measures what the program costs every context switch:
// the kernel's own statistics of the program's run time per run
// (prog-ns/switch; every switch on the node runs it) while two threads
// bounce a byte over pipes on one CPU, for each set of features and for
// "empty", a program on the same hook that only returns: the statistics'
// own clock reads are in every figure, and the difference to empty is
// what the features cost. "both-direct" is both without the buffer in
// the task's storage: every switch counted in its cgroup's stats. "off"
// is the round trip with no program at all (ns/op).
//
//	go test -run '^$' -bench Switch -count 5 ./schedlat
func BenchmarkSwitch(b *testing.B) {
	b.Run("off", func(b *testing.B) { pingPong(b, b.N) })
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"empty", Options{}},
		{"latency", Options{Latency: true}},
		{"preemption", Options{Preemption: true}},
		{"both", Options{Latency: true, Preemption: true}},
		{"both-direct", Options{Latency: true, Preemption: true, direct: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var prog *ebpf.Program
			if tc.name == "empty" {
				prog = attachEmpty(b)
			} else {
				_, s := openSource(b, tc.opts)
				prog = s.coll.Programs[progName]
			}
			stats := progStats(b, prog)
			runs0, ns0 := stats()
			b.ResetTimer()
			pingPong(b, b.N)
			b.StopTimer()
			runs, ns := stats()
			b.ReportMetric((ns-ns0)/float64(runs-runs0), "prog-ns/switch")
			b.ReportMetric(float64(runs-runs0)/float64(b.N), "switches/op")
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

// BenchmarkRead measures a read of the counts with both features on: the
// flush iterator over every task of the machine, then the stats map;
// "direct" without the buffer, so with no iterator. tasks/op is how many
// tasks the machine had (/proc/<pid>/task).
//
//	go test -run '^$' -bench Read -count 5 ./schedlat
func BenchmarkRead(b *testing.B) {
	for _, direct := range []bool{false, true} {
		name := "buffered"
		if direct {
			name = "direct"
		}
		b.Run(name, func(b *testing.B) {
			_, s := openSource(b, Options{Latency: true, Preemption: true, direct: direct})
			pingPong(b, 1000)
			tasks, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*")
			b.ResetTimer()
			for range b.N {
				if _, err := s.Read(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(tasks)), "tasks/op")
		})
	}
}
