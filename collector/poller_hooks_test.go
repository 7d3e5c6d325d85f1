package collector

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
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
	p.AfterPass(func(tb *container.Table, requested bool) {
		if tb != table {
			t.Errorf("AfterPass got another table")
		}
		calls <- call{requested: requested, passes: tb.Counters().Passes}
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
