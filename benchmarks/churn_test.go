package benchmarks_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/baseline"
	"github.com/schedstatd/schedstatd/internal/testkit/benchx"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// pidSpace is the kernel's largest pid_max, which systemd sets on most
// nodes: ids are handed out in order and a run of a million identities
// reuses none, so a map keyed by id sees every identity as new.
const pidSpace = 4_194_304

// node is a synthetic node: a fixed number of live tasks in one pod
// cgroup, replaced by new tasks between passes.
type node struct {
	k    *synth.Kernel
	tree *synth.Tree
	live []int32
	next int32
	pos  int
}

func newNode(live int) *node {
	n := &node{k: synth.NewKernel(), tree: synth.NewTree("/", "/pod")}
	for range live {
		n.live = append(n.live, n.spawn())
	}
	n.tree.Set("/pod", n.live...)
	return n
}

func (n *node) spawn() int32 {
	n.next = n.next%pidSpace + 1
	t := n.k.Spawn(n.next)
	t.Stat = schedstat.Stat{RunNanoseconds: 1e6, WaitNanoseconds: 1e5, Timeslices: 10}
	return n.next
}

// churn replaces r live tasks, the oldest first, by new ones.
func (n *node) churn(r int) {
	for range r {
		i := n.pos % len(n.live)
		n.pos++
		n.k.Exit(n.live[i])
		n.live[i] = n.spawn()
	}
	n.tree.Set("/pod", n.live...)
}

// read reads a synthetic task by id, as a ReadFunc.
func (n *node) read(pid int32) (schedstat.Stat, error) {
	t := n.k.Task(pid)
	if t == nil {
		return schedstat.Stat{}, unix.ENOENT
	}
	return t.Stat, nil
}

// accountant is one design under churn.
type accountant interface {
	pass() error
	entries() int
}

type tableDesign struct{ t *container.Table }

func (d tableDesign) pass() error  { return d.t.Pass() }
func (d tableDesign) entries() int { return d.t.Len() }

// pidMapDesign keeps one pid map per cgroup of the listing.
type pidMapDesign struct {
	tree *synth.Tree
	l    cgroupfs.Listing
	maps []*baseline.PidMap
}

func (d *pidMapDesign) pass() error {
	if err := d.tree.List(&d.l); err != nil {
		return err
	}
	for i := range d.l.Cgroups {
		if _, err := d.maps[i].Update(d.l.Cgroups[i].TIDs); err != nil {
			return err
		}
	}
	return nil
}

func (d *pidMapDesign) entries() int {
	n := 0
	for _, m := range d.maps {
		n += m.Len()
	}
	return n
}

func newPidMapDesign(n *node, newMap func(baseline.ReadFunc) *baseline.PidMap) accountant {
	d := &pidMapDesign{tree: n.tree}
	for range n.tree.Cgroups {
		d.maps = append(d.maps, newMap(n.read))
	}
	return d
}

var churnDesigns = []struct {
	name string
	make func(*node) accountant
}{
	{"schedstatd", func(n *node) accountant { return tableDesign{container.NewTable(n.tree, n.k)} }},
	{"pid-map-pruned", func(n *node) accountant { return newPidMapDesign(n, baseline.NewPruned) }},
	{"pid-map-unpruned", func(n *node) accountant { return newPidMapDesign(n, baseline.NewUnpruned) }},
}

// BenchmarkMapGrowth runs a node of a fixed number of live tasks through
// a number of passes, all its tasks replaced by new ones between two
// passes (the worst churn a pass-based reader can see: every task it
// lists is new): identities=live*passes new identities after the first
// pass. One op is the whole run, from an empty design. It reports what the design holds at
// the end: live-entries and peak-entries, heap-bytes (its live heap after
// GC), bytes/task (heap-bytes per live task), the cost of a pass, and for
// schedstatd entries-bound, the live tasks of the current and the
// previous pass, which its entries must never exceed. The unpruned map
// sums every entry it holds on every pass, as cAdvisor's did, so its pass
// grows slower with every identity it has seen.
func BenchmarkMapGrowth(b *testing.B) {
	lives := []int{1000, 10000}
	runs := []int{10, 100}
	if testing.Short() {
		runs = runs[:1]
	}
	for _, live := range lives {
		for _, passes := range runs {
			ids := live * passes
			for _, d := range churnDesigns {
				b.Run(fmt.Sprintf("live=%d/identities=%d/%s", live, ids, d.name), func(b *testing.B) {
					var n *node
					var a accountant
					peak := 0
					b.ReportAllocs()
					for b.Loop() {
						n = newNode(live)
						a = d.make(n)
						for p := range passes + 1 {
							if p > 0 {
								n.churn(live)
							}
							if err := a.pass(); err != nil {
								b.Fatal(err)
							}
							peak = max(peak, a.entries())
						}
					}
					perRun := b.Elapsed().Nanoseconds() / int64(b.N)
					entries := a.entries()
					with := benchx.HeapAfterGC()
					runtime.KeepAlive(a)
					without := benchx.HeapAfterGC()
					if n.k.Live() != live {
						b.Fatalf("node has %d live tasks, want %d", n.k.Live(), live)
					}
					heap := float64(with) - float64(without)
					b.ReportMetric(float64(entries), "live-entries")
					b.ReportMetric(float64(peak), "peak-entries")
					b.ReportMetric(heap, "heap-bytes")
					b.ReportMetric(heap/float64(live), "bytes/task")
					b.ReportMetric(float64(perRun)/float64(passes+1), "ns/pass")
					b.ReportMetric(float64(perRun)/float64(passes+1)/float64(live), "ns/task")
					switch d.name {
					case "schedstatd":
						bound := live + live
						b.ReportMetric(float64(bound), "entries-bound")
						if peak > bound {
							b.Errorf("%d entries after a pass, more than the %d live tasks of this pass and the last", peak, bound)
						}
					case "pid-map-unpruned":
						// The pod's map holds every id it ever read; the
						// root lists no task of its own.
						if want := live + ids; entries != want {
							b.Errorf("unpruned maps hold %d ids, want every id seen (%d)", entries, want)
						}
					}
				})
			}
		}
	}
}
