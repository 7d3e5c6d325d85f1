package container_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
)

// benchNode is a synthetic node for the table's micro benchmarks: a root,
// pods of 9 containers each, holding the tasks between them. Reads
// cost nothing here, so the benchmarks measure the accounting alone; the
// real reads are measured in package benchmarks.
type benchNode struct {
	k    *synth.Kernel
	tree *synth.Tree
	ctrs []string
	tids [][]int32 // by container
	next int32
}

func newBenchNode(pods, tasks int) *benchNode {
	n := &benchNode{k: synth.NewKernel(), tree: synth.NewTree("/", "/kubepods")}
	for p := range pods {
		pod := fmt.Sprintf("/kubepods/pod%d", p)
		n.tree.Mkdir(pod)
		for c := range 9 {
			ctr := fmt.Sprintf("%s/c%d", pod, c)
			n.tree.Mkdir(ctr)
			n.ctrs = append(n.ctrs, ctr)
		}
	}
	n.tids = make([][]int32, len(n.ctrs))
	for i := range tasks {
		c := i % len(n.ctrs)
		n.tids[c] = append(n.tids[c], n.spawn())
	}
	n.set()
	return n
}

func (n *benchNode) spawn() int32 {
	n.next++
	n.k.Spawn(n.next).Stat = stat(uint64(n.next), 1, 1)
	return n.next
}

func (n *benchNode) set() {
	for i, ctr := range n.ctrs {
		n.tree.Set(ctr, n.tids[i]...)
	}
}

// run lets every live task run a little, so each pass has increases to
// credit.
func (n *benchNode) run() {
	for _, tids := range n.tids {
		for _, tid := range tids {
			s := &n.k.Task(tid).Stat
			s.RunNanoseconds += 1000
			s.Timeslices++
		}
	}
}

func reportPerTask(b *testing.B, tasks int, ms0 *runtime.MemStats) {
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	per := float64(b.N) * float64(tasks)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/task")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/per, "allocs/task")
}

// BenchmarkTablePass is a steady-state pass: every task known and still
// listed where it was, no exits.
func BenchmarkTablePass(b *testing.B) {
	for _, tasks := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("tasks=%d", tasks), func(b *testing.B) {
			n := newBenchNode(10, tasks)
			table := container.NewTable(n.tree, n.k)
			defer table.Close()
			for range 2 {
				n.run()
				if err := table.Pass(); err != nil {
					b.Fatal(err)
				}
			}
			var ms0 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ReportAllocs()
			for b.Loop() {
				if err := table.Pass(); err != nil {
					b.Fatal(err)
				}
			}
			reportPerTask(b, tasks, &ms0)
			b.ReportMetric(float64(table.Len()), "live-entries")
		})
	}
}

// BenchmarkTablePassChurn is a pass after a tenth of the tasks exited and
// as many new ones started: retiring the old, opening the new. The
// synthetic kernel's own work of ending and starting tasks is in the time.
func BenchmarkTablePassChurn(b *testing.B) {
	for _, tasks := range []int{1000, 10000} {
		churn := tasks / 10
		b.Run(fmt.Sprintf("tasks=%d/churn=%d", tasks, churn), func(b *testing.B) {
			n := newBenchNode(10, tasks)
			table := container.NewTable(n.tree, n.k)
			defer table.Close()
			if err := table.Pass(); err != nil {
				b.Fatal(err)
			}
			pos := 0
			b.ReportAllocs()
			for b.Loop() {
				for range churn {
					c := pos % len(n.ctrs)
					j := (pos / len(n.ctrs)) % len(n.tids[c])
					pos++
					n.k.Exit(n.tids[c][j])
					n.tids[c][j] = n.spawn()
				}
				n.set()
				if err := table.Pass(); err != nil {
					b.Fatal(err)
				}
			}
			if table.Len() != tasks {
				b.Fatalf("table holds %d tasks, want %d", table.Len(), tasks)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(churn), "ns/new-task")
			b.ReportMetric(float64(table.Len()), "live-entries")
		})
	}
}

// BenchmarkTableSnapshot copies the totals of every cgroup for readers,
// as the poller does after each pass.
func BenchmarkTableSnapshot(b *testing.B) {
	n := newBenchNode(100, 10000)
	cgroups := len(n.tree.Cgroups)
	b.Run(fmt.Sprintf("cgroups=%d", cgroups), func(b *testing.B) {
		table := container.NewTable(n.tree, n.k)
		defer table.Close()
		if err := table.Pass(); err != nil {
			b.Fatal(err)
		}
		var s *container.Snapshot
		b.ReportAllocs()
		for b.Loop() {
			s = table.Snapshot()
		}
		if len(s.Cgroups) != cgroups {
			b.Fatalf("snapshot of %d cgroups, want %d", len(s.Cgroups), cgroups)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(cgroups), "ns/cgroup")
	})
}
