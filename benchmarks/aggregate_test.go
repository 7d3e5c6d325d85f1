package benchmarks_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/schedstatd/schedstatd/aggregate"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/taskiter"
)

// BenchmarkPassThreads runs whole passes, as BenchmarkPass does, at 10,000
// and 100,000 threads (2,000 with -short) in 40 pods of 4 containers, over
// the sources that keep no fd per thread: the table of totals kept in the
// kernel (aggregate) and the task iterator (iter), and, where the open
// file limit allows one fd per thread, the procfs source (schedstatd).
// The sleeping threads come from helpers of at most 25,000 threads each (a
// process's memory mappings bound its threads); pid_max is raised for the
// run where it is below what the threads need, and put back. Per-task
// figures are per task on the node the pass read (aggregate, iter) or
// listed (schedstatd).
func BenchmarkPassThreads(b *testing.B) {
	sizes := []int{10000, 100000}
	if testing.Short() {
		sizes = []int{2000}
	}
	e2e.RequireRoot(b)
	const pods = 40
	for _, threads := range sizes {
		b.Run(fmt.Sprintf("threads=%d/cgroups=%d", threads, pods*(1+containersPerPod)), func(b *testing.B) {
			raisePIDMax(b, 2*threads+32768)
			top, leaves := makePods(b, pods)
			for left := threads; left > 0; left -= perHelper {
				place(b, top, leaves, testproc.StartSleepers(b, min(left, perHelper)))
			}
			b.Run("aggregate", func(b *testing.B) { benchAggregate(b, top, threads) })
			b.Run("iter", func(b *testing.B) {
				h := cpuacct(b)
				src, err := taskiter.Open(taskiter.Options{Hierarchy: h})
				if err != nil {
					b.Fatalf("task iterator: %v", err)
				}
				b.Cleanup(func() { src.Close() })
				table := container.NewTable(src.Lister(), src.Opener())
				s := warm(b, table)
				checkTop(b, h, s, top, threads)
				measureTable(b, table, s.Cgroups[0].Tasks)
			})
			b.Run("schedstatd", func(b *testing.B) {
				if fit := fitThreads(b, threads); fit < threads {
					b.Skipf("the open file limit fits %d fds, not one per thread of %d", fit, threads)
				}
				table := container.NewTable(openTop(b, top), procsource.Opener{Root: "/proc"})
				tasks := warm(b, table).Cgroups[0].Tasks
				if tasks < threads {
					b.Fatalf("a pass read %d tasks of %d threads", tasks, threads)
				}
				measureTable(b, table, tasks)
			})
		})
	}
}

// perHelper is the most sleeping threads one helper process starts.
const perHelper = 25000

// benchAggregate measures passes of a table of totals kept in the kernel,
// over the whole cpuacct hierarchy (the iterator visits every task on the
// node), with the threads below top.
func benchAggregate(b *testing.B, top string, threads int) {
	h := cpuacct(b)
	src, err := aggregate.Open(aggregate.Options{Hierarchy: h, Exits: true})
	if err != nil {
		b.Fatalf("aggregating source: %v", err)
	}
	b.Cleanup(func() { src.Close() })
	table := container.NewCgroupTable(src.Lister(), src)
	s := warm(b, table)
	checkTop(b, h, s, top, threads)
	measureTable(b, table, s.Cgroups[0].Tasks)
	b.ReportMetric(float64(src.Stats().Cgroups), "kernel-entries")
}

// cpuacct opens the whole v1 cpuacct hierarchy.
func cpuacct(b *testing.B) *cgroupfs.Hierarchy {
	h, err := cgroupfs.Open(testcg.Root, "cpuacct")
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// checkTop fails unless the snapshot shows top with at least threads tasks.
func checkTop(b *testing.B, h *cgroupfs.Hierarchy, s *container.Snapshot, top string, threads int) {
	rel := strings.TrimPrefix(top, h.Dir())
	i := slices.IndexFunc(s.Cgroups, func(c container.CgroupStats) bool { return c.Path == rel })
	if i < 0 || s.Cgroups[i].Tasks < threads {
		b.Fatalf("no cgroup %s with %d threads in the pass", rel, threads)
	}
}

// raisePIDMax raises kernel.pid_max to at least n for the benchmark, and
// puts it back when b ends.
func raisePIDMax(b *testing.B, n int) {
	const path = "/proc/sys/kernel/pid_max"
	old, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	cur, err := strconv.Atoi(strings.TrimSpace(string(old)))
	if err != nil || cur >= n {
		return
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(n)), 0); err != nil {
		b.Fatalf("raise pid_max from %d to %d: %v", cur, n, err)
	}
	b.Cleanup(func() { os.WriteFile(path, old, 0) })
}
