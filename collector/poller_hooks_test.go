package collector

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/schedstat"
)

// TestPollerStateHooks checks that the hooks a state file is written from
// run on Run's goroutine: after every pass, saying whether a scrape waits
// for it, before the scrape gets its answer; and once at the end, after a
// last whole pass and before the table is closed.
func TestPollerStateHooks(t *testing.T) {
	k := synth.NewKernel()
	k.Spawn(1)
	tree := synth.NewTree("/")
	tree.Set("/", 1)
	table := container.NewTable(tree, k)
	p := NewPoller(table, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	type call struct {
		requested, closed bool
		passes            uint64
	}
	calls := make(chan call, 16)
	p.AfterPass(func(tb *container.Table, requested bool) bool {
		if tb != table {
			t.Errorf("AfterPass got another table")
		}
		calls <- call{requested: requested, passes: tb.Counters().Passes}
		return true
	})
	p.BeforeClose(func(tb *container.Table) {
		// Still open: its state can be read.
		calls <- call{closed: true, passes: tb.Counters().Passes}
		if tb.Len() != 1 {
			t.Errorf("table closed before BeforeClose: %d tasks", tb.Len())
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	if c := <-calls; c.requested || c.passes != 1 {
		t.Errorf("after the first pass: %+v, want one pass, not requested", c)
	}
	s, err := p.Fresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The hook ran before the answer: its call is already waiting.
	select {
	case c := <-calls:
		if !c.requested || c.passes != s.Counters.Passes {
			t.Errorf("after a requested pass: %+v, the answer's pass %d", c, s.Counters.Passes)
		}
	default:
		t.Errorf("Fresh answered before AfterPass ran")
	}
	cancel()
	<-done
	if c := <-calls; !c.closed || c.passes != 3 {
		t.Errorf("at the end: %+v, want BeforeClose after a third, last pass", c)
	}
}

// TestPollerServesKeptPasses: a pass the AfterPass hook did not keep (the
// state file was not written for it) is not served, so that a restart,
// which goes on from the file, never shows less than was served; the pass
// a scrape waits for is.
func TestPollerServesKeptPasses(t *testing.T) {
	k := synth.NewKernel()
	task := k.Spawn(1)
	tree := synth.NewTree("/")
	tree.Set("/", 1)
	p := NewPoller(container.NewTable(tree, k), time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	p.AfterPass(func(tb *container.Table, requested bool) bool {
		task.Stat.RunNanoseconds += 1000 // runs on between passes
		return requested
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	s, err := p.Fresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for p.Last().Counters.Passes < s.Counters.Passes+3 {
		if time.Now().After(deadline) {
			t.Fatalf("no background pass in 10s")
		}
		time.Sleep(time.Millisecond)
	}
	if kept, last := p.Kept(), p.Last(); kept != s {
		t.Errorf("serving pass %d (run %d ns), want the scrape's pass %d (run %d); the latest is %d (run %d)",
			kept.Counters.Passes, kept.Cgroups[0].Stat.RunNanoseconds, s.Counters.Passes, s.Cgroups[0].Stat.RunNanoseconds,
			last.Counters.Passes, last.Cgroups[0].Stat.RunNanoseconds)
	}
}

// TestPollerDrainsExitRecordsBeforeClose: at the end, the exit records of
// tasks the passes found gone, which the kernel writes a little after the
// reap, are waited for and fed before the BeforeClose hook writes the
// state, so their last stretch is in it.
func TestPollerDrainsExitRecordsBeforeClose(t *testing.T) {
	k := synth.NewKernel()
	task := k.Spawn(1)
	task.Stat.RunNanoseconds = 100
	tree := synth.NewTree("/")
	tree.Set("/", 1)
	table := container.NewTable(tree, k)
	table.TrackExits()
	p := NewPoller(table, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var stopping atomic.Bool
	feeds := 0
	p.BeforePass(func(tb *container.Table) {
		if !stopping.Load() {
			return
		}
		// The record comes with the third feed after the stop began.
		if feeds++; feeds == 3 {
			tb.Exit(container.Exit{TID: 1, StartTime: task.Start, Final: task.Stat, Cgroup: tree.ID("/")})
		}
	})
	closed := make(chan schedstat.Stat, 1)
	p.BeforeClose(func(tb *container.Table) {
		closed <- tb.State().Cgroups[0].Own
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	if _, err := p.Fresh(ctx); err != nil {
		t.Fatal(err)
	}
	// The task runs 50 more, exits and is reaped; a pass retires it.
	task.Stat.RunNanoseconds = 150
	k.Exit(1)
	tree.Set("/")
	s, err := p.Fresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Counters.RetiredTracked; n != 1 {
		t.Fatalf("%d retired tasks wait for their records, want 1", n)
	}
	stopping.Store(true)
	cancel()
	<-done
	if got := <-closed; got.RunNanoseconds != 150 {
		t.Errorf("the state would hold %d ns of run, want 150: the record fed before the close", got.RunNanoseconds)
	}
}
