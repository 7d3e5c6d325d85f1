package benchmarks_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/schedstatd/schedstatd/internal/testkit/baseline"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
)

// BenchmarkRead reads the schedstat file of every sleeping thread of a
// helper process once per op, three ways: os.ReadFile of
// /proc/<tid>/schedstat with cAdvisor's parsing, open+read+close into a
// reused buffer, and schedstatd's pread on an fd kept open since the task
// was first seen. It reports ns/task, cpu-ns/task and allocs/task, back to
// back and after a sleep.
func BenchmarkRead(b *testing.B) {
	sizes := []int{2000, 10000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("threads=%d", n), func(b *testing.B) {
			raiseNoFile(b, uint64(n+fdReserve))
			p := testproc.StartSleepers(b, n)
			read := baseline.ReadFile("/proc")
			b.Run("readfile", func(b *testing.B) {
				eachMode(b, n, func() {
					for _, tid := range p.Workers {
						if _, err := read(tid); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
			b.Run("open-read-close", func(b *testing.B) {
				buf := make([]byte, 1024)
				paths := make([]string, n)
				for i, tid := range p.Workers {
					paths[i] = "/proc/" + strconv.Itoa(int(tid)) + "/schedstat"
				}
				eachMode(b, n, func() {
					for _, path := range paths {
						if _, err := baseline.OpenReadClose(path, buf); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
			b.Run("kept-fd", func(b *testing.B) {
				tasks := openTasks(b, p.Workers)
				eachMode(b, n, func() {
					for _, t := range tasks {
						if _, err := t.Read(); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		})
	}
}

// eachMode measures pass in every mode, as a sub-benchmark of b each.
func eachMode(b *testing.B, tasks int, pass func()) {
	for _, m := range modes {
		b.Run(m.Name, func(b *testing.B) { measure(b, m, tasks, pass) })
	}
}

// openTasks opens every task in tids, closing them when tb ends.
func openTasks(tb testing.TB, tids []int32) []*procsource.Task {
	tb.Helper()
	tasks := make([]*procsource.Task, 0, len(tids))
	tb.Cleanup(func() {
		for _, t := range tasks {
			t.Close()
		}
	})
	for _, tid := range tids {
		t, err := procsource.Open("/proc", tid)
		if err != nil {
			tb.Fatal(err)
		}
		tasks = append(tasks, t)
	}
	return tasks
}
