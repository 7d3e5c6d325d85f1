package schedlat

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// DefaultTopPairs is how many (victim, preemptor) pairs a Tracker keeps
// per window.
const DefaultTopPairs = 20

// PairCount is a pair and its preemptions in a window.
type PairCount struct {
	Pair
	Preemptions uint64
}

// PairWindow is the busiest (victim, preemptor) pairs over one window.
type PairWindow struct {
	// Start and End bound the window; both are zero before the first
	// window ends.
	Start, End time.Time
	// Pairs are the busiest pairs, most preemptions first, at most the
	// Tracker's k.
	Pairs []PairCount
	// Total is the preemptions of every pair in the window, Distinct the
	// number of pairs with any.
	Total    uint64
	Distinct int
}

// Tracker turns the program's running pair counts into the busiest pairs
// of the last window. Its methods may be called from any goroutine.
type Tracker struct {
	src *Source
	k   int

	mu     sync.Mutex
	last   map[Pair]uint64
	lastAt time.Time
	window PairWindow
}

// NewTracker returns a Tracker of src's pairs that keeps the k busiest
// (DefaultTopPairs if k is 0). src may be nil or count no preemption;
// the windows are then empty.
func NewTracker(src *Source, k int) *Tracker {
	if k <= 0 {
		k = DefaultTopPairs
	}
	return &Tracker{src: src, k: k}
}

// Run samples every interval until ctx ends.
func (t *Tracker) Run(ctx context.Context, interval time.Duration) {
	if !t.src.Preemption() {
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	t.Sample(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			t.Sample(now)
		}
	}
}

// Sample ends a window at now: the pairs' increases since the last
// Sample. Pairs with none are deleted from the kernel's map, so it keeps
// room for the active ones.
func (t *Tracker) Sample(now time.Time) error {
	if !t.src.Preemption() {
		return nil
	}
	cur, err := t.src.Pairs()
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var idle []Pair
	var w PairWindow
	for p, n := range cur {
		d := n - t.last[p]
		if t.last != nil && d == 0 {
			idle = append(idle, p)
			delete(cur, p)
			continue
		}
		if n < t.last[p] { // deleted and made again in between
			d = n
		}
		w.Total += d
		w.Distinct++
		w.Pairs = append(w.Pairs, PairCount{Pair: p, Preemptions: d})
	}
	slices.SortFunc(w.Pairs, func(a, b PairCount) int {
		return cmp.Or(cmp.Compare(b.Preemptions, a.Preemptions), cmp.Compare(a.Victim, b.Victim), cmp.Compare(a.Preemptor, b.Preemptor))
	})
	w.Pairs = w.Pairs[:min(len(w.Pairs), t.k)]
	if t.last != nil {
		w.Start, w.End = t.lastAt, now
		t.window = w
	}
	t.last, t.lastAt = cur, now
	t.src.forgetPairs(idle)
	return nil
}

// Window returns the last complete window.
func (t *Tracker) Window() PairWindow {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.window
}
