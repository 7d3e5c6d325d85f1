package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/schedstatd/schedstatd/container"
)

// staleIntervals is how many intervals may pass without a good pass before
// the Poller calls itself unhealthy.
const staleIntervals = 3

// finalPassTimeout bounds the pass run at the end for the BeforeClose hook.
const finalPassTimeout = 2 * time.Second

// After that pass, the exit records of the tasks it and the passes before
// found gone are awaited up to drainTimeout, fed every drainPoll: the
// kernel writes a record from an RCU callback after the task's last
// switch, and one that came after the daemon stopped would go to the next
// one or nowhere.
const (
	drainTimeout = time.Second
	drainPoll    = 20 * time.Millisecond
)

// Poller runs passes of one task table, in the background and on request.
// Its methods may be called from any goroutine; Run owns the table.
type Poller struct {
	table    *container.Table
	interval time.Duration
	logger   *slog.Logger
	requests chan request
	done     chan struct{}
	duration prometheus.Histogram
	// beforePass, if set, is called by Run's goroutine right before every
	// pass: an exit source feeding the table.
	beforePass func(*container.Table)
	// afterPass, if set, is called by Run's goroutine after every pass
	// not cut short, with whether a request waits for it, before the
	// answer goes out; beforeClose once ctx is done, before the table is
	// closed. The state file is written from them: afterPass reports
	// whether what the pass counted may be served (see Kept).
	afterPass   func(t *container.Table, requested bool) (kept bool)
	beforeClose func(*container.Table)

	mu       sync.Mutex
	last     *container.Snapshot
	kept     *container.Snapshot
	lastGood time.Time
	lastErr  error
	// lastWhole is when the last pass read the whole tree; partialErr
	// is why the passes since could not.
	lastWhole  time.Time
	partialErr error
	started    time.Time
}

// NewPoller returns a poller of table that runs a pass every interval once
// Run is called.
func NewPoller(table *container.Table, interval time.Duration, logger *slog.Logger) *Poller {
	return &Poller{
		table:    table,
		interval: interval,
		logger:   logger,
		requests: make(chan request),
		done:     make(chan struct{}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace,
			Name:      "collection_duration_seconds",
			Help:      "Time one accounting pass took: listing the cgroups and reading every task.",
			Buckets:   []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		last:    &container.Snapshot{},
		kept:    &container.Snapshot{},
		started: time.Now(),
	}
}

// BeforePass sets a hook that Run's goroutine calls with the table right
// before every pass, the first included, such as an exit source's Feed. It
// must be called before Run.
func (p *Poller) BeforePass(hook func(*container.Table)) { p.beforePass = hook }

// AfterPass sets a hook that Run's goroutine calls with the table after
// every pass that ran to its end, with whether a request waits for that
// pass, before the request is answered. The hook reports whether the
// pass's totals may be served: the state file holds them now, or it
// cannot hold them (it is off, or its write failed). A pass it does not
// report kept is not served (Kept), so that no value served is above the
// file a restart goes on from. It must be called before Run.
func (p *Poller) AfterPass(hook func(t *container.Table, requested bool) (kept bool)) {
	p.afterPass = hook
}

// BeforeClose sets a hook that Run's goroutine calls with the table once
// its context is done, after one last pass (of at most finalPassTimeout)
// and before it closes the table. It must be called before Run.
func (p *Poller) BeforeClose(hook func(*container.Table)) { p.beforeClose = hook }

// Duration is the histogram of pass durations, for registration.
func (p *Poller) Duration() prometheus.Histogram { return p.duration }

// Run runs a pass at once, then every interval and on every request, until
// ctx is done. It then closes the table, releasing every fd it holds.
func (p *Poller) Run(ctx context.Context) error {
	defer close(p.done)
	defer p.table.Close()
	ticker := time.NewTicker(p.interval)
	defer ticker.Stop()
	p.after(ctx, p.pass(ctx), false)
	for {
		var waiters []request
		select {
		case <-ctx.Done():
			if p.beforeClose != nil {
				// The pass ctx ended may have been cut short, its
				// cgroups' counters read and their threads not: one
				// more, bounded, leaves the table whole for the hook.
				fctx, cancel := context.WithTimeout(context.Background(), finalPassTimeout)
				p.pass(fctx)
				cancel()
				p.drain()
				p.beforeClose(p.table)
			}
			return nil
		case <-ticker.C:
		case w := <-p.requests:
			waiters = append(waiters, w)
		}
		// Everyone already waiting shares this pass.
	drain:
		for {
			select {
			case w := <-p.requests:
				waiters = append(waiters, w)
			default:
				break drain
			}
		}
		s := p.pass(ctx)
		p.after(ctx, s, len(waiters) > 0)
		for _, w := range waiters {
			if w.view != nil && ctx.Err() == nil {
				w.view(p.table)
			}
			w.reply <- s
		}
	}
}

// drain feeds the table from the BeforePass hook until no retired task
// waits for its exit record, or drainTimeout has passed.
func (p *Poller) drain() {
	if p.beforePass == nil {
		return
	}
	for deadline := time.Now().Add(drainTimeout); p.table.Counters().RetiredTracked > 0 && time.Now().Before(deadline); {
		time.Sleep(drainPoll)
		p.beforePass(p.table)
	}
}

// after calls the AfterPass hook unless ctx ended, which may have cut the
// pass short, and makes s, the pass's snapshot, the one served if the
// hook says it was kept.
func (p *Poller) after(ctx context.Context, s *container.Snapshot, requested bool) {
	if ctx.Err() != nil {
		return
	}
	if p.afterPass != nil && !p.afterPass(p.table, requested) {
		return
	}
	p.mu.Lock()
	p.kept = s
	p.mu.Unlock()
}

// pass runs one pass and publishes its snapshot. A pass cut short because
// ctx ended publishes nothing new.
func (p *Poller) pass(ctx context.Context) *container.Snapshot {
	start := time.Now()
	if p.beforePass != nil {
		p.beforePass(p.table)
	}
	err := p.table.PassContext(ctx)
	if ctx.Err() != nil {
		return p.Last()
	}
	p.duration.Observe(time.Since(start).Seconds())
	s := p.table.Snapshot()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if p.lastErr == nil || p.lastErr.Error() != err.Error() {
			p.logger.Error("pass failed; serving the last good totals", "err", err)
		}
		// A failed pass leaves the table's totals as they were, so the
		// snapshot repeats them with the new counters.
		p.lastErr = err
	} else {
		if p.lastErr != nil {
			p.logger.Info("passes succeed again")
		}
		p.lastErr = nil
		p.lastGood = s.Time
		p.partial(s)
	}
	p.last = s
	return s
}

// partial follows whether passes read the whole tree, logging each change.
// Called with p.mu held.
func (p *Poller) partial(s *container.Snapshot) {
	if s.PartialErr == nil {
		if p.partialErr != nil {
			p.logger.Info("passes read the whole cgroup tree again")
		}
		p.partialErr, p.lastWhole = nil, s.Time
		return
	}
	if p.partialErr == nil || p.partialErr.Error() != s.PartialErr.Error() {
		p.logger.Warn("pass could not read the whole cgroup tree; what it could not see keeps its last state",
			"cgroups_unread", s.Counters.CgroupsUnread, "err", s.PartialErr)
	}
	p.partialErr = s.PartialErr
}

// request is one caller waiting for a pass: reply gets the pass's
// snapshot, after view, if set, has read the table.
type request struct {
	reply chan *container.Snapshot
	view  func(*container.Table)
}

// Fresh asks for a pass and returns its snapshot. If ctx ends first, or the
// poller is stopped, it returns the latest snapshot and the reason.
func (p *Poller) Fresh(ctx context.Context) (*container.Snapshot, error) {
	return p.fresh(ctx, request{reply: make(chan *container.Snapshot, 1)})
}

// ErrNoView is returned by FreshView when the pass it waited for was cut
// short, so view did not read the table.
var ErrNoView = errors.New("collector: the pass was cut short; the table was not read")

// FreshView is Fresh that also calls view with the table on Run's
// goroutine, after the pass and before its snapshot is returned, so view
// sees the table as that snapshot does. Requests share passes as Fresh's
// do. view must only read the table, quickly, and keep nothing of it; what
// it copies out may be used once FreshView has returned nil.
func (p *Poller) FreshView(ctx context.Context, view func(*container.Table)) (*container.Snapshot, error) {
	ran := false
	s, err := p.fresh(ctx, request{reply: make(chan *container.Snapshot, 1), view: func(t *container.Table) {
		view(t)
		ran = true
	}})
	if err == nil && !ran {
		err = ErrNoView
	}
	return s, err
}

func (p *Poller) fresh(ctx context.Context, r request) (*container.Snapshot, error) {
	reply := r.reply
	select {
	case p.requests <- r:
	case <-ctx.Done():
		return p.Last(), ctx.Err()
	case <-p.done:
		return p.Last(), fmt.Errorf("collector: poller stopped")
	}
	select {
	case s := <-reply:
		return s, nil
	case <-ctx.Done():
		return p.Last(), ctx.Err()
	}
}

// Last returns the latest snapshot; before the first pass it is empty.
func (p *Poller) Last() *container.Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// Kept returns the latest snapshot the AfterPass hook reported kept, the
// one to serve: without a hook, the latest. Before the first such pass it
// is empty. A pass a request waits for is always kept (the state file is
// written for it), so a scrape that got a fresh pass serves that pass.
func (p *Poller) Kept() *container.Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.kept
}

// Health returns nil while the last good pass is recent and the last pass
// that read the whole tree too, and otherwise an error saying how old it
// is and why the passes since have failed or been partial.
func (p *Poller) Health(now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	limit := staleIntervals * p.interval
	if p.lastGood.IsZero() {
		if now.Sub(p.started) <= limit {
			return nil
		}
		return fmt.Errorf("no pass has succeeded since start %s ago: %v", now.Sub(p.started).Round(time.Millisecond), p.lastErr)
	}
	if age := now.Sub(p.lastGood); age > limit {
		return fmt.Errorf("last good pass %s ago (limit %s): %v", age.Round(time.Millisecond), limit, p.lastErr)
	}
	if p.partialErr != nil {
		since := p.lastWhole
		if since.IsZero() {
			since = p.started
		}
		if age := now.Sub(since); age > limit {
			return fmt.Errorf("passes have not read the whole cgroup tree for %s (limit %s): %v", age.Round(time.Millisecond), limit, p.partialErr)
		}
	}
	return nil
}
