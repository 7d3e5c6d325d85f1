package container_test

import (
	"testing"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/benchx"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
)

// churner keeps a fixed number of live synthetic tasks in one cgroup and
// replaces some of them with new tasks each pass, taking ids from a small
// id space so that ids are reused as on a real node.
type churner struct {
	k     *synth.Kernel
	tree  *synth.Tree
	live  []int32
	next  int32
	space int32
	made  int
}

func newChurner(live int, space int32) *churner {
	c := &churner{k: synth.NewKernel(), tree: synth.NewTree("/", "/pod"), space: space}
	for range live {
		c.live = append(c.live, c.spawn())
	}
	c.tree.Set("/pod", c.live...)
	return c
}

func (c *churner) spawn() int32 {
	for {
		c.next = c.next%c.space + 1
		if c.k.Task(c.next) == nil {
			break
		}
	}
	task := c.k.Spawn(c.next)
	task.Stat = stat(uint64(c.next), 1, 1)
	c.made++
	return c.next
}

// churn replaces n live tasks and lets every live task run a little.
func (c *churner) churn(n int) {
	for i := range n {
		j := (i * 7919) % len(c.live)
		c.k.Exit(c.live[j])
		c.live[j] = c.spawn()
	}
	for _, tid := range c.live {
		s := &c.k.Task(tid).Stat
		s.RunNanoseconds += 1000
		s.Timeslices++
	}
	c.tree.Set("/pod", c.live...)
}

func TestChurnStaysBounded(t *testing.T) {
	const live, perPass, identities = 1000, 500, 1_000_000
	passes := identities / perPass
	if testing.Short() {
		passes /= 20
	}
	c := newChurner(live, live+perPass/2)
	table := container.NewTable(c.tree, c.k)
	defer table.Close()
	for range 3 {
		c.churn(perPass)
		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
	}
	before := benchx.HeapAfterGC()
	prevLive := live
	var last uint64
	for range passes {
		c.churn(perPass)
		if err := table.Pass(); err != nil {
			t.Fatal(err)
		}
		if n := table.Len(); n > live+prevLive {
			t.Fatalf("table holds %d tasks, more than live now (%d) plus live before (%d)", n, live, prevLive)
		}
		if c.k.Handles != table.Len() {
			t.Fatalf("%d handles open for %d tracked tasks", c.k.Handles, table.Len())
		}
		run := table.Snapshot().Cgroups[0].Stat.RunNanoseconds
		if run < last {
			t.Fatalf("root run time fell from %d to %d", last, run)
		}
		last = run
	}
	after := benchx.HeapAfterGC()
	t.Logf("%d identities over %d passes; heap %d -> %d bytes; %+v", c.made, passes, before, after, table.Counters())
	if float64(after) > 1.25*float64(before) {
		t.Errorf("heap grew from %d to %d bytes (more than 25%%) under churn", before, after)
	}
	cnt := table.Counters()
	if cnt.Reuses == 0 {
		t.Errorf("no id was reused in %d identities over a %d-id space", c.made, c.space)
	}
	if cnt.Exits < uint64(perPass*(passes-1)) {
		t.Errorf("exits = %d, want at least %d", cnt.Exits, perPass*(passes-1))
	}
}

func TestBurstGivesMemoryBack(t *testing.T) {
	c := newChurner(1000, 4_000_000)
	table := container.NewTable(c.tree, c.k)
	defer table.Close()
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	before := benchx.HeapAfterGC()

	// A burst of 100,000 live tasks, then back to 1,000.
	burst := append([]int32(nil), c.live...)
	for range 99_000 {
		burst = append(burst, c.spawn())
	}
	c.tree.Set("/pod", burst...)
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	if table.Len() != len(burst) {
		t.Fatalf("tracked %d of %d", table.Len(), len(burst))
	}
	for _, tid := range burst[1000:] {
		c.k.Exit(tid)
	}
	burst = nil
	c.k.Compact()
	c.tree.Cgroups[1].TIDs = append([]int32(nil), c.live...)
	if err := table.Pass(); err != nil {
		t.Fatal(err)
	}
	if table.Len() != 1000 {
		t.Errorf("tracked %d after the burst, want 1000", table.Len())
	}
	if table.Counters().Rebuilds == 0 {
		t.Error("the task map was not rebuilt after the burst")
	}
	after := benchx.HeapAfterGC()
	t.Logf("heap %d -> %d bytes", before, after)
	if float64(after) > 1.25*float64(before) {
		t.Errorf("heap %d bytes after the burst, %d before: the map kept its buckets", after, before)
	}
}
