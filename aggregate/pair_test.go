package aggregate

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/exitcapture"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
)

// hierarchies are the hierarchies the real tests run over: the v1 cpuacct
// one and the unified one, both mounted on this kind of hybrid node (a
// pure v2 machine has the unified one only).
var hierarchies = []string{"cpuacct", cgroupfs.Unified}

// pair is two tables over one hierarchy and the same tasks: one of totals
// over the aggregating source, and the reference, the procfs source with
// exit capture at sched_process_free. Both count every task up to its
// exit, so with the workloads stopped they agree to the nanosecond.
type pair struct {
	h     *cgroupfs.Hierarchy
	agg   *Source
	exits *exitcapture.Source
	kern  *container.Table // totals kept in the kernel
	ref   *container.Table // procfs and exit records
}

func newPair(t testing.TB, name string) *pair {
	t.Helper()
	e2e.RequireRoot(t)
	requireTaskStorage(t)
	testcg.Require(t, name)
	h := hierarchy(t, name)
	p := &pair{h: h, agg: openSource(t, Options{Hierarchy: h, Exits: true})}
	// The kernel totals get no move records: the reference leaves them
	// out too, so that both credit a moved task's time the same way.
	x, err := exitcapture.Open(exitcapture.Options{Hierarchy: h, Hook: exitcapture.HookFree, SkipMigrations: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	p.exits = x
	p.kern = container.NewCgroupTable(p.agg.Lister(), p.agg)
	p.ref = container.NewTable(h, procsource.Opener{Root: "/proc", Budget: procsource.SharedBudget(4)})
	t.Cleanup(func() { p.kern.Close(); p.ref.Close() })
	return p
}

// pass runs a pass of both tables, the reference fed its exit records
// first, as the daemon does.
func (p *pair) pass(t testing.TB) {
	t.Helper()
	if err := p.passErr(); err != nil {
		t.Fatal(err)
	}
}

// passErr is pass for another goroutine than the test's.
func (p *pair) passErr() error {
	p.exits.Feed(p.ref)
	if err := p.ref.Pass(); err != nil {
		return err
	}
	return p.kern.Pass()
}

// settle waits until every task that exited has been freed and its
// record read: both sources take a task's last stretch at
// sched_process_free, an RCU callback, the same call for both, so once
// the reference has every record, the kernel totals have every credit.
func (p *pair) settle(t testing.TB) {
	t.Helper()
	testproc.AwaitFrees(t, func(freed func(int32)) {
		p.exits.Drain(func(x container.Exit) {
			freed(x.TID)
			p.ref.Exit(x)
		})
	})
}

// compare fails unless both tables show the same for every path, and
// records what they show, failing if any series fell.
func (p *pair) compare(t testing.TB, step string, last map[string]container.CgroupStats, paths ...string) {
	t.Helper()
	want, got := p.ref.Snapshot(), p.kern.Snapshot()
	for _, path := range paths {
		w, inRef := want.Lookup(path)
		g, ok := got.Lookup(path)
		if ok != inRef {
			t.Errorf("%s: %s in the reference's snapshot: %v, in the kernel totals': %v", step, path, inRef, ok)
		}
		if !ok {
			continue // removed: a series made again goes on from last
		}
		if diff := cmp.Diff(w, g, cmpopts.IgnoreFields(container.CgroupStats{}, "UsageNanoseconds", "Bandwidth", "Pressure")); diff != "" {
			t.Errorf("%s: %s (-procfs and exit records +kernel totals):\n%s", step, path, diff)
		}
		if prev := last[path]; g.Stat.RunNanoseconds < prev.Stat.RunNanoseconds || g.Stat.WaitNanoseconds < prev.Stat.WaitNanoseconds || g.Stat.Timeslices < prev.Stat.Timeslices {
			t.Errorf("%s: %s fell from %+v to %+v", step, path, prev.Stat, g.Stat)
		}
		last[path] = g
	}
}

// rel returns dir's path relative to h's root, as the snapshot names it.
func rel(t testing.TB, h *cgroupfs.Hierarchy, dir string) string {
	t.Helper()
	r, err := filepath.Rel(h.Dir(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return "/" + r
}
