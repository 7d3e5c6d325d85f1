package taskiter_test

import (
	"fmt"
	"testing"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/baseline"
	"github.com/schedstatd/schedstatd/internal/testkit/benchx"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
	"golang.org/x/sys/unix"
)

// BenchmarkRead reads the counters of every sleeping thread of a helper
// process once per op, four ways: os.ReadFile of /proc/<tid>/schedstat with
// cAdvisor's parsing, pread on an fd kept open since the task was first
// seen (the procfs source), one read of the task iterator followed by a
// lookup of each thread through its handle (this source), and a whole
// container.Table pass over each source (listing included). It reports,
// per helper thread, wall time, CPU time (getrusage RUSAGE_SELF, user and
// system) and allocations, back to back and after a sleep. The iterator
// also reads the node's other tasks; they are not counted in the divisor.
func BenchmarkRead(b *testing.B) {
	e2e.RequireRoot(b)
	sizes := []int{5000, 20000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("threads=%d", n), func(b *testing.B) {
			fds := raiseNoFile(b, uint64(n+fdReserve))
			p := testproc.StartSleepers(b, n)
			_, s := open(b, "")
			b.Run("readfile", func(b *testing.B) {
				read := baseline.ReadFile("/proc")
				eachMode(b, n, func() {
					for _, tid := range p.Workers {
						if _, err := read(tid); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
			b.Run("pread", func(b *testing.B) {
				tids := p.Workers
				if fit := fds - fdReserve; fit < len(tids) {
					b.Logf("RLIMIT_NOFILE cannot be raised above %d: pread over %d threads of %d", fds, fit, len(tids))
					tids = tids[:fit]
				}
				tasks := make([]*procsource.Task, len(tids))
				for i, tid := range tids {
					t, err := procsource.Open("/proc", tid)
					if err != nil {
						b.Fatal(err)
					}
					tasks[i] = t
					defer t.Close()
				}
				eachMode(b, len(tasks), func() {
					for _, t := range tasks {
						if _, err := t.Read(); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
			b.Run("iter", func(b *testing.B) {
				if err := s.Read(); err != nil {
					b.Fatal(err)
				}
				hs := make([]container.TaskHandle, len(p.Workers))
				for i, tid := range p.Workers {
					h, err := s.Opener().Open(tid)
					if err != nil {
						b.Fatal(err)
					}
					hs[i] = h
				}
				eachMode(b, n, func() {
					if err := s.Read(); err != nil {
						b.Fatal(err)
					}
					for _, h := range hs {
						if _, err := h.Read(); err != nil {
							b.Fatal(err)
						}
					}
				})
				b.ReportMetric(float64(s.Tasks()), "node-tasks")
			})
			b.Run("table-procfs", func(b *testing.B) {
				h, _ := open(b, "")
				t := container.NewTable(h, procsource.Opener{Root: "/proc"})
				defer t.Close()
				tablePass(b, t, n)
			})
			b.Run("table-iter", func(b *testing.B) {
				t := container.NewTable(s.Lister(), s.Opener())
				defer t.Close()
				tablePass(b, t, n)
			})
		})
	}
}

// tablePass measures a steady-state pass of t.
func tablePass(b *testing.B, t *container.Table, n int) {
	for range 2 {
		if err := t.Pass(); err != nil {
			b.Fatal(err)
		}
	}
	eachMode(b, n, func() {
		if err := t.Pass(); err != nil {
			b.Fatal(err)
		}
	})
}

// eachMode measures pass back to back and after a sleep (benchx).
func eachMode(b *testing.B, tasks int, pass func()) { benchx.EachMode(b, tasks, pass) }

// fdReserve is how many fds, beyond one per thread, a benchmark process
// needs: its standard files, the runtime's, the walker's.
const fdReserve = 256

// raiseNoFile raises the open file limit to n, or as close to it as the
// hard limit and fs.nr_open allow, and returns the limit: the pread
// baseline keeps an fd per thread.
func raiseNoFile(tb testing.TB, n uint64) int {
	tb.Helper()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	if lim.Cur >= n {
		return int(lim.Cur)
	}
	if unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: n, Max: max(n, lim.Max)}) == nil {
		return int(n)
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: lim.Max, Max: lim.Max}); err != nil {
		tb.Fatal(err)
	}
	return int(lim.Max)
}
