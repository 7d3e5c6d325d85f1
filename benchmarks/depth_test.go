package benchmarks_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/baseline"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/schedstat"
)

// depthLeaves is the number of leaf cgroups the tasks are dealt over, all
// at the deepest level.
const depthLeaves = 10

// BenchmarkDepth runs passes over the same sleeping threads placed in
// synthetic hierarchies 1, 4 and 8 levels deep: a chain of cgroups with
// depthLeaves leaves at the bottom holding every thread. schedstatd reads
// each thread once and rolls the totals up in memory; the per-level
// baseline is cAdvisor's layout, a handler per cgroup that lists and reads
// its whole subtree with os.ReadFile, so a thread is read once per level
// and once more for the root. reads/op counts schedstat reads per pass.
func BenchmarkDepth(b *testing.B) {
	const threads = 2000
	p := testproc.StartSleepers(b, threads)
	m := modes[0]
	for _, depth := range []int{1, 4, 8} {
		tree := depthTree(depth, p.Workers)
		b.Run(fmt.Sprintf("threads=%d/depth=%d", threads, depth), func(b *testing.B) {
			b.Run("schedstatd", func(b *testing.B) {
				reads := countReads(b, tree)
				table := container.NewTable(tree, procsource.Opener{Root: "/proc"})
				b.Cleanup(func() { table.Close() })
				if err := table.Pass(); err != nil {
					b.Fatal(err)
				}
				measure(b, m, threads, func() {
					if err := table.Pass(); err != nil {
						b.Fatal(err)
					}
				})
				b.ReportMetric(float64(reads), "reads/op")
				b.ReportMetric(float64(table.Len()), "live-entries")
			})
			b.Run("per-level-reread", func(b *testing.B) {
				h := baseline.NewPerLevel(baseline.ReadFile("/proc"))
				var l cgroupfs.Listing
				pass := func() {
					if err := tree.List(&l); err != nil {
						b.Fatal(err)
					}
					if err := h.Pass(&l); err != nil {
						b.Fatal(err)
					}
				}
				pass()
				r0 := h.Reads()
				measure(b, m, threads, pass)
				b.ReportMetric(float64(h.Reads()-r0)/float64(b.N), "reads/op")
				b.ReportMetric(float64(h.Len()), "live-entries")
			})
		})
	}
}

// depthTree returns a tree whose depthLeaves leaves sit depth levels below
// the root, below a chain of depth-1 cgroups, and hold tids between them.
func depthTree(depth int, tids []int32) *synth.Tree {
	tree := synth.NewTree("/")
	dir := ""
	for d := 1; d < depth; d++ {
		dir += "/l" + strconv.Itoa(d)
		tree.Mkdir(dir)
	}
	per := (len(tids) + depthLeaves - 1) / depthLeaves
	for i := range depthLeaves {
		leaf := dir + "/c" + strconv.Itoa(i)
		tree.Mkdir(leaf)
		tree.Set(leaf, tids[min(i*per, len(tids)):min((i+1)*per, len(tids))]...)
	}
	return tree
}

// countReads returns how many schedstat reads a steady-state pass of a
// table over tree makes.
func countReads(tb testing.TB, tree *synth.Tree) int {
	tb.Helper()
	o := &countingOpener{}
	table := container.NewTable(tree, o)
	defer table.Close()
	for range 2 {
		o.reads = 0
		if err := table.Pass(); err != nil {
			tb.Fatal(err)
		}
	}
	return o.reads
}

type countingOpener struct {
	procsource.Opener
	reads int
}

type countingHandle struct {
	container.TaskHandle
	o *countingOpener
}

func (o *countingOpener) Open(tid int32) (container.TaskHandle, error) {
	h, err := procsource.Opener{Root: "/proc"}.Open(tid)
	if err != nil {
		return nil, err
	}
	return countingHandle{h, o}, nil
}

func (h countingHandle) Read() (schedstat.Stat, error) {
	h.o.reads++
	return h.TaskHandle.Read()
}
