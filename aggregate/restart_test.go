package aggregate

import (
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// TestRestart: a table of kernel totals saves its state, its source goes
// (the daemon stops), and a new source and table restore it and prime:
// no series of the test cgroup falls across the restart, while a thread
// spins and others churn in it.
func TestRestart(t *testing.T) {
	requireTaskStorage(t)
	h := hierarchy(t, walked)
	dir := testcg.Make(t, walked)
	path := rel(t, h, dir)
	testproc.StartIn(t, 1, dir)
	testproc.StartChurnIn(t, dir)
	var last container.CgroupStats
	check := func(step string, tb *container.Table) {
		t.Helper()
		cg, ok := tb.Snapshot().Lookup(path)
		if !ok {
			t.Fatalf("%s: no %s", step, path)
		}
		if cg.Stat.RunNanoseconds < last.Stat.RunNanoseconds || cg.Stat.WaitNanoseconds < last.Stat.WaitNanoseconds || cg.Stat.Timeslices < last.Stat.Timeslices {
			t.Errorf("%s: %s fell from %+v to %+v", step, path, last.Stat, cg.Stat)
		}
		last = cg
	}
	var saved container.State
	for round := range 5 {
		s, err := Open(Options{Hierarchy: h, Exits: true})
		if err != nil {
			t.Fatal(err)
		}
		tb := container.NewCgroupTable(s.Lister(), s)
		if round > 0 {
			if err := tb.Restore(saved); err != nil {
				t.Fatal(err)
			}
			s.Prime()
		}
		for range 5 {
			time.Sleep(50 * time.Millisecond)
			if err := tb.Pass(); err != nil {
				t.Fatal(err)
			}
			check("pass", tb)
		}
		saved = tb.State()
		tb.Close()
		s.Close()
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%+v", last.Stat)
}
