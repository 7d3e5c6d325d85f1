package exitcapture

import (
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
)

// pair is two tables over the same hierarchy and the same tasks: one fed
// by an exit source, one polling only, so one run gives both figures.
type pair struct {
	src            *Source
	capture, polls *container.Table
}

func newPair(t testing.TB, src *Source, hierarchy string) *pair {
	t.Helper()
	open := func() *container.Table {
		h, err := cgroupfs.Open(testcg.Root, hierarchy)
		if err != nil {
			t.Fatal(err)
		}
		tb := container.NewTable(h, procsource.Opener{Root: "/proc", Budget: procsource.SharedBudget(4)})
		t.Cleanup(func() { tb.Close() })
		return tb
	}
	return &pair{src: src, capture: open(), polls: open()}
}

// pass is what the daemon does each interval, for both tables.
func (p *pair) pass(t testing.TB) {
	t.Helper()
	p.src.Feed(p.capture)
	for _, tb := range []*container.Table{p.capture, p.polls} {
		if err := tb.Pass(); err != nil {
			t.Fatal(err)
		}
	}
}

// every runs a pass every interval until the returned stop is called,
// which waits for the last pass to end, so the caller owns the tables
// again.
func (p *pair) every(t testing.TB, interval time.Duration) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				p.pass(t)
			}
		}
	}()
	return func() { close(quit); <-done }
}

// settle returns once every task that exited before it was called has had
// its record fed to the capturing table.
func (p *pair) settle(t testing.TB) {
	t.Helper()
	p.capture.TrackExits()
	feedUntilMarker(t, p.src, p.capture.Exit)
}

// feedUntilMarker hands fn every record of tasks that exited before it was
// called. Other tasks on the node may exit all the while, so it waits for
// markers instead of for silence (testproc.AwaitFrees).
func feedUntilMarker(t testing.TB, src *Source, fn func(container.Exit)) {
	t.Helper()
	testproc.AwaitFrees(t, func(freed func(int32)) {
		src.Drain(func(x container.Exit) {
			freed(x.TID)
			fn(x)
		})
	})
}

// run returns the run seconds of the cgroup at rel in tb's last pass.
func run(t testing.TB, tb *container.Table, rel string) uint64 {
	t.Helper()
	cg, ok := tb.Snapshot().Lookup(rel)
	if !ok {
		t.Fatalf("cgroup %s not in the snapshot", rel)
	}
	return cg.Stat.RunNanoseconds
}
