package collector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/internal/testkit/testrun"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// slowLister lists a synthetic tree slowly and records how many listings
// ever ran at once.
type slowLister struct {
	tree     *synth.Tree
	delay    time.Duration
	inFlight atomic.Int32
	maxSeen  atomic.Int32
	calls    atomic.Int32
	fail     atomic.Bool
	// partial makes every cgroup but the root unreadable, for want of fds.
	partial atomic.Bool
}

func (s *slowLister) List(l *cgroupfs.Listing) error {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxSeen.Load()
		if n <= m || s.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	s.calls.Add(1)
	time.Sleep(s.delay)
	if s.fail.Load() {
		return errors.New("cgroup root unreadable")
	}
	if err := s.tree.List(l); err != nil {
		return err
	}
	if s.partial.Load() {
		l.Cgroups[0].Err = fmt.Errorf("cgroupfs: /: %w", unix.EMFILE)
		l.Cgroups[0].SubtreeUnread = true
		l.Cgroups = l.Cgroups[:1]
		l.Errors = 1
	}
	return nil
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func startPoller(t *testing.T, lister cgroupfs.Lister, interval time.Duration) *Poller {
	t.Helper()
	k := synth.NewKernel()
	k.Spawn(1)
	p := NewPoller(container.NewTable(lister, k), interval, quietLogger())
	testrun.Background(t, p.Run)
	return p
}

func TestConcurrentScrapesShareOnePass(t *testing.T) {
	tree := synth.NewTree("/")
	tree.Set("/", 1)
	l := &slowLister{tree: tree, delay: 30 * time.Millisecond}
	p := startPoller(t, l, time.Hour)
	// Let the first pass finish.
	if _, err := p.Fresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := l.calls.Load()

	const scrapes = 20
	start := time.Now()
	var wg sync.WaitGroup
	times := make([]time.Time, scrapes)
	for i := range scrapes {
		wg.Go(func() {
			s, err := p.Fresh(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			times[i] = s.Time
		})
	}
	wg.Wait()
	passes := l.calls.Load() - before
	t.Logf("%d concurrent scrapes took %d passes", scrapes, passes)
	if passes < 1 || passes > 2 {
		t.Errorf("%d concurrent scrapes ran %d passes, want 1 or 2", scrapes, passes)
	}
	if m := l.maxSeen.Load(); m != 1 {
		t.Errorf("%d passes ran at once", m)
	}
	for i, ts := range times {
		if ts.Before(start) {
			t.Errorf("scrape %d got a snapshot from %v, before it asked at %v", i, ts, start)
		}
	}
}

func TestHealthFollowsPasses(t *testing.T) {
	tree := synth.NewTree("/")
	l := &slowLister{tree: tree}
	const interval = 20 * time.Millisecond
	p := startPoller(t, l, interval)
	if _, err := p.Fresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Health(time.Now()); err != nil {
		t.Fatalf("healthy poller says %v", err)
	}
	l.fail.Store(true)
	time.Sleep(staleIntervals*interval + 5*interval)
	err := p.Health(time.Now())
	if err == nil {
		t.Fatal("healthy after passes failed for more than three intervals")
	}
	t.Logf("health: %v", err)
	if s := p.Last(); s.Counters.FailedPasses == 0 || len(s.Cgroups) != 1 {
		t.Errorf("after failures: failed=%d cgroups=%d, want >0 and the last good 1", s.Counters.FailedPasses, len(s.Cgroups))
	}
	l.fail.Store(false)
	if _, err := p.Fresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Health(time.Now()); err != nil {
		t.Errorf("after recovery: %v", err)
	}
}

// TestHealthReportsPartialPasses: passes that succeed but cannot read the
// whole tree keep what they could not see, and /healthz says so, with the
// reason, once they have gone on for more than three intervals.
func TestHealthReportsPartialPasses(t *testing.T) {
	tree := synth.NewTree("/", "/a")
	l := &slowLister{tree: tree}
	const interval = 20 * time.Millisecond
	p := startPoller(t, l, interval)
	if _, err := p.Fresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.partial.Store(true)
	s, err := p.Fresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Lookup("/a"); !ok || s.PartialErr == nil {
		t.Fatalf("partial pass: /a kept %v, partial error %v", ok, s.PartialErr)
	}
	if err := p.Health(time.Now()); err != nil {
		t.Errorf("one partial pass already unhealthy: %v", err)
	}
	time.Sleep(staleIntervals*interval + 5*interval)
	// A pass just now, so that only the partial passes make it unhealthy
	// however late the background passes run on a loaded machine.
	if _, err := p.Fresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	err = p.Health(time.Now())
	if err == nil || !strings.Contains(err.Error(), "too many open files") {
		t.Fatalf("after partial passes for more than three intervals: %v, want the reason", err)
	}
	t.Logf("health: %v", err)
	l.partial.Store(false)
	if _, err := p.Fresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Health(time.Now()); err != nil {
		t.Errorf("after a complete pass: %v", err)
	}
}

func TestFreshGivesUpAtDeadline(t *testing.T) {
	tree := synth.NewTree("/")
	l := &slowLister{tree: tree, delay: 200 * time.Millisecond}
	p := startPoller(t, l, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	s, err := p.Fresh(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || s == nil {
		t.Errorf("Fresh = %v, %v; want the last snapshot and DeadlineExceeded", s, err)
	}
	if d := time.Since(start); d > 150*time.Millisecond {
		t.Errorf("Fresh waited %v past its 20ms deadline", d)
	}
}

func TestStopClosesEveryHandle(t *testing.T) {
	k := synth.NewKernel()
	tree := synth.NewTree("/", "/a")
	for tid := int32(1); tid <= 50; tid++ {
		k.Spawn(tid)
		tree.Cgroups[1].TIDs = append(tree.Cgroups[1].TIDs, tid)
	}
	p := NewPoller(container.NewTable(tree, k), time.Hour, quietLogger())
	stop := testrun.Background(t, p.Run)
	if _, err := p.Fresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if k.Handles != 50 {
		t.Fatalf("%d handles open while running, want 50", k.Handles)
	}
	stop()
	if k.Handles != 0 {
		t.Errorf("%d handles still open after the poller stopped", k.Handles)
	}
	if _, err := p.Fresh(context.Background()); err == nil {
		t.Error("Fresh after stop returned no error")
	}
}

func TestBeforePassFeedsTheTable(t *testing.T) {
	tree := synth.NewTree("/", "/a")
	k := synth.NewKernel()
	table := container.NewTable(tree, k)
	p := NewPoller(table, time.Hour, quietLogger())
	var calls atomic.Int32
	p.BeforePass(func(tb *container.Table) {
		if tb != table {
			t.Error("hook got another table")
		}
		if calls.Add(1) == 2 {
			// An exit record of a task no pass saw, delivered before the
			// second pass.
			tb.Exit(container.Exit{TID: 9, StartTime: 1, Final: schedstat.Stat{RunNanoseconds: 5}, Cgroup: tree.ID("/a")})
		}
	})
	testrun.Background(t, p.Run)
	s, err := p.Fresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("hook ran %d times for 2 passes", got)
	}
	if a, _ := s.Lookup("/a"); a.Stat.RunNanoseconds != 5 {
		t.Errorf("/a = %+v, want the exit record's 5 ns", a.Stat)
	}
}
