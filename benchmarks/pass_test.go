package benchmarks_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/baseline"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/taskiter"
	"golang.org/x/sys/unix"
)

// containersPerPod is the number of container cgroups in each pod cgroup
// of the benchmark tree; threads live in the containers.
const containersPerPod = 4

// BenchmarkPass runs whole passes over a real cgroup v1 (cpuacct) tree of
// pods and containers holding the sleeping threads of one helper process,
// walked by cgroupfs from the tree's top: schedstatd's table (walk, one
// pread per task on a kept fd, accounting, rollup), the same table fed by
// the BPF task iterator (one read of every task on the node, a walk of the
// whole hierarchy mapping cgroup ids to paths, accounting, rollup), the
// table of totals kept in the kernel (one iterator run that emits
// nothing, a batch read of the per-cgroup totals, the walk, accounting per
// cgroup, rollup: its CPU time includes the program's, which runs in the
// reading thread's read), the floor of one bare
// pread per listed task on fds kept open (no walk, no parsing, no
// accounting), the walk alone (each cgroup's tasks file and counter), and
// a pass that walks the same way but reads every task with os.ReadFile
// into cAdvisor-style pid maps, one per cgroup. Per-task figures are per
// listed thread.
func BenchmarkPass(b *testing.B) {
	threads, pods := 20000, 40
	if testing.Short() {
		threads, pods = 2000, 4
	}
	e2e.RequireRoot(b)
	threads = fitThreads(b, threads)
	cgroups := pods * (1 + containersPerPod)
	b.Run(fmt.Sprintf("threads=%d/cgroups=%d", threads, cgroups), func(b *testing.B) {
		top, leaves := makePods(b, pods)
		p := testproc.StartSleepers(b, threads)
		place(b, top, leaves, p)
		b.Run("pread", func(b *testing.B) {
			var l cgroupfs.Listing
			if err := openTop(b, top).List(&l); err != nil {
				b.Fatal(err)
			}
			fds := openFDs(b, &l)
			buf := make([]byte, 64)
			for _, m := range modes {
				b.Run(m.Name, func(b *testing.B) {
					measure(b, m, len(fds), func() {
						for _, fd := range fds {
							if _, err := unix.Pread(fd, buf, 0); err != nil {
								b.Fatal(err)
							}
						}
					})
				})
			}
		})
		b.Run("walk", func(b *testing.B) {
			h := openTop(b, top)
			var l cgroupfs.Listing
			if err := h.List(&l); err != nil {
				b.Fatal(err)
			}
			for _, m := range modes {
				b.Run(m.Name, func(b *testing.B) {
					measure(b, m, countTIDs(&l), func() {
						if err := h.List(&l); err != nil {
							b.Fatal(err)
						}
					})
				})
			}
		})
		b.Run("schedstatd", func(b *testing.B) {
			table := container.NewTable(openTop(b, top), procsource.Opener{Root: "/proc"})
			tasks := warm(b, table).Cgroups[0].Tasks
			if tasks < threads {
				b.Fatalf("a pass read %d tasks of %d threads", tasks, threads)
			}
			measureTable(b, table, tasks)
		})
		b.Run("iter", func(b *testing.B) {
			// The iterator reads every task on the node and resolves cgroups
			// by id in a whole hierarchy, so it walks all of cpuacct, not
			// the tree alone; per-task figures are per task it read.
			h, err := cgroupfs.Open(testcg.Root, "cpuacct")
			if err != nil {
				b.Fatal(err)
			}
			src, err := taskiter.Open(taskiter.Options{Hierarchy: h})
			if err != nil {
				b.Fatalf("task iterator: %v", err)
			}
			b.Cleanup(func() { src.Close() })
			table := container.NewTable(src.Lister(), src.Opener())
			s := warm(b, table)
			rel := strings.TrimPrefix(top, h.Dir())
			i := slices.IndexFunc(s.Cgroups, func(c container.CgroupStats) bool { return c.Path == rel })
			if i < 0 || s.Cgroups[i].Tasks < threads {
				b.Fatalf("no cgroup %s with %d threads in the iterator's pass", rel, threads)
			}
			measureTable(b, table, s.Cgroups[0].Tasks)
		})
		b.Run("aggregate", func(b *testing.B) {
			benchAggregate(b, top, threads)
		})
		b.Run("readfile", func(b *testing.B) {
			h := openTop(b, top)
			handlers := baseline.NewFlat(baseline.ReadFile("/proc"))
			var l cgroupfs.Listing
			pass := func() {
				if err := h.List(&l); err != nil {
					b.Fatal(err)
				}
				if err := handlers.Pass(&l); err != nil {
					b.Fatal(err)
				}
			}
			pass()
			for _, m := range modes {
				b.Run(m.Name, func(b *testing.B) {
					measure(b, m, countTIDs(&l), pass)
					b.ReportMetric(float64(handlers.Len()), "live-entries")
				})
			}
		})
	})
}

// warm runs two passes of table, closed when b ends, so that every task is
// known, and returns the second's snapshot.
func warm(b *testing.B, table *container.Table) *container.Snapshot {
	b.Cleanup(func() { table.Close() })
	for range 2 {
		if err := table.Pass(); err != nil {
			b.Fatal(err)
		}
	}
	return table.Snapshot()
}

// measureTable measures steady-state passes of table in every mode, per
// task of tasks.
func measureTable(b *testing.B, table *container.Table, tasks int) {
	for _, m := range modes {
		b.Run(m.Name, func(b *testing.B) {
			measure(b, m, tasks, func() {
				if err := table.Pass(); err != nil {
					b.Fatal(err)
				}
			})
			b.ReportMetric(float64(table.Len()), "live-entries")
		})
	}
}

// makePods makes a test cgroup with pods pod cgroups of containersPerPod
// container cgroups each, all removed when tb ends, and returns the test
// cgroup's directory and the containers' directories.
func makePods(tb testing.TB, pods int) (string, []string) {
	tb.Helper()
	top := testcg.Make(tb, "cpuacct")
	var leaves []string
	for i := range pods {
		pod := filepath.Join(top, fmt.Sprintf("pod%03d", i))
		if err := os.Mkdir(pod, 0o755); err != nil {
			tb.Fatal(err)
		}
		for j := range containersPerPod {
			ctr := filepath.Join(pod, fmt.Sprintf("ctr%d", j))
			if err := os.Mkdir(ctr, 0o755); err != nil {
				tb.Fatal(err)
			}
			leaves = append(leaves, ctr)
		}
	}
	return top, leaves
}

// place moves the helper into top and deals its sleeping threads out over
// leaves, one thread at a time through the v1 tasks files. Its runtime
// threads stay in top.
func place(tb testing.TB, top string, leaves []string, p *testproc.Proc) {
	tb.Helper()
	testcg.Move(tb, top, p.PID)
	fds := make([]int, len(leaves))
	for i, dir := range leaves {
		fd, err := unix.Open(filepath.Join(dir, "tasks"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			tb.Fatal(err)
		}
		defer unix.Close(fd)
		fds[i] = fd
	}
	var buf []byte
	for i, tid := range p.Workers {
		buf = strconv.AppendInt(buf[:0], int64(tid), 10)
		if _, err := unix.Write(fds[i%len(fds)], buf); err != nil {
			tb.Fatalf("move thread %d into %s: %v", tid, leaves[i%len(fds)], err)
		}
	}
}

// openTop returns a walker of the hierarchy below dir alone.
func openTop(tb testing.TB, dir string) *cgroupfs.Hierarchy {
	tb.Helper()
	h, err := cgroupfs.Open(dir, "")
	if err != nil {
		tb.Fatal(err)
	}
	if h.Dir() != dir || h.Version() != cgroupfs.V1 {
		tb.Fatalf("cgroupfs.Open(%s) walks %s %s, want the v1 tree below it", dir, h.Version(), h.Dir())
	}
	return h
}

// openFDs opens /proc/<tid>/schedstat for every thread in l, closing them
// when tb ends.
func openFDs(tb testing.TB, l *cgroupfs.Listing) []int {
	tb.Helper()
	var fds []int
	tb.Cleanup(func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	})
	for _, c := range l.Cgroups {
		for _, tid := range c.TIDs {
			fd, err := unix.Open("/proc/"+strconv.Itoa(int(tid))+"/schedstat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				tb.Fatal(err)
			}
			fds = append(fds, fd)
		}
	}
	return fds
}

func countTIDs(l *cgroupfs.Listing) int {
	n := 0
	for _, c := range l.Cgroups {
		n += len(c.TIDs)
	}
	return n
}
