package schedlat

import (
	"path"
	"sync"
	"time"

	"github.com/schedstatd/schedstatd/container"
)

// Passes a cgroup id may be missing from the snapshots before its counts
// are given up on it: a cgroup made since the last pass shows in the
// next one; one made and removed between two passes never does, and its
// counts go to the root.
const (
	unlistedRounds = 3
	// goneRounds is how many passes a removed cgroup's path is
	// remembered, for a
	// last switch of a task of it (a zombie's final switch away) that
	// comes after its counts were moved to its path.
	goneRounds = 10
)

// Rollup turns the program's counts, kept by the id of each task's own
// cgroup, into the counts of every cgroup of a pass with its descendants
// included, as the other container series are: a cgroup's histogram sums
// those of its subtree. Counts of a removed cgroup stay with its path, or
// the nearest ancestor that still exists, so no cgroup's counts ever fall.
// Its methods may be called from any goroutine.
type Rollup struct {
	counts Counter

	mu    sync.Mutex
	round uint64
	// lastPass is the pass number (Counters.Passes) of the last round.
	lastPass uint64
	// known maps the ids listed by the last round to their paths.
	known map[uint64]string
	// unlisted counts the rounds an id with counts was in no snapshot.
	unlisted map[uint64]int
	// gone maps the ids of removed cgroups to their paths and the round
	// they were removed in.
	gone map[uint64]goneCgroup
	// retired holds the counts of removed cgroups, by the path of the
	// nearest cgroup that still exists.
	retired map[string]*Counts
	// retiredSeen is the last round each path of retired existed or
	// took counts in.
	retiredSeen map[string]uint64
	// unattributed counts the cgroup ids given up on, their counts
	// credited to the root.
	unattributed uint64
	// last is the totals of the last round that read the counts, served
	// again to every caller of the same pass and kept in the state file.
	last map[string]Counts
	// base holds what an earlier daemon served, by path (Restore): added
	// to the path's totals, the series go on from where they stood.
	// baseSeen is the last round each path of base existed in.
	base     map[string]Counts
	baseSeen map[string]uint64
	since    time.Time // of the earliest daemon whose counts base holds
}

// Kept is what a Rollup served, in the state file: the totals of every
// cgroup by path, descendants included, and since when they count.
type Kept struct {
	Since  time.Time
	Totals map[string]Counts
}

type goneCgroup struct {
	path  string
	round uint64
}

// Counter is what a Rollup reads: a Source, or fixed counts in tests.
type Counter interface {
	// Read returns every cgroup's counts by cgroup id; Forget drops those
	// of cgroups that are gone.
	Read() (map[uint64]Counts, error)
	Forget(ids []uint64)
	// Latency and Preemption say what is counted, Since since when.
	Latency() bool
	Preemption() bool
	Since() time.Time
}

// NewRollup returns a Rollup of c's counts; c may be nil, when the
// program is off or unavailable.
func NewRollup(c Counter) *Rollup {
	return &Rollup{counts: c, known: map[uint64]string{}, unlisted: map[uint64]int{},
		gone: map[uint64]goneCgroup{}, retired: map[string]*Counts{}, retiredSeen: map[string]uint64{}}
}

// Source returns the Source whose counts r rolls up, nil if none (or a
// Counter of another kind).
func (r *Rollup) Source() *Source {
	if r == nil {
		return nil
	}
	s, _ := r.counts.(*Source)
	return s
}

// Counter returns what r reads, nil if nothing.
func (r *Rollup) Counter() Counter {
	if r == nil {
		return nil
	}
	return r.counts
}

// Totals reads the program's counts and returns, for every cgroup of the
// snapshot s that has any, its counts with its descendants', by path, on
// from what Restore gave. Every call for the pass of the last read, or an
// earlier one, gets the totals of that read again: what the state file
// holds (Keep) is what is served. The map is shared: do not modify it.
func (r *Rollup) Totals(s *container.Snapshot) (map[string]Counts, error) {
	if r == nil || r.counts == nil {
		return nil, nil
	}
	// The read is under the lock: a read older than the last round's
	// would find counts already moved.
	r.mu.Lock()
	defer r.mu.Unlock()
	// Rounds are passes: scrapes that share a pass do not age anything,
	// nor read again. A caller of an older pass than the last read's
	// gets that read's totals too: they are what the state file may
	// hold, and a new read would serve more.
	newRound := r.round == 0 || s.Counters.Passes > r.lastPass
	if !newRound && r.last != nil {
		return r.last, nil
	}
	counts, err := r.counts.Read()
	if err != nil {
		return nil, err
	}
	if newRound {
		r.round++
		r.lastPass = s.Counters.Passes
	}
	listed := make(map[uint64]string, len(s.Cgroups))
	exists := make(map[string]bool, len(s.Cgroups))
	for i := range s.Cgroups {
		c := &s.Cgroups[i]
		exists[c.Path] = true
		if c.ID != 0 {
			listed[c.ID] = c.Path
		}
	}
	own := make(map[string]*Counts)
	known := make(map[uint64]string)
	var forget []uint64
	for id, c := range counts {
		if p, ok := listed[id]; ok {
			known[id] = p
			delete(r.unlisted, id)
			addTo(own, p, &c)
			continue
		}
		p, wasKnown := r.known[id]
		if g, ok := r.gone[id]; !wasKnown && ok {
			p, wasKnown = g.path, true
		}
		if !wasKnown {
			if newRound {
				r.unlisted[id]++
			}
			if r.unlisted[id] <= unlistedRounds {
				continue
			}
			delete(r.unlisted, id)
			r.unattributed++
			p = "/"
		}
		// Removed (or given up on): the counts move to the retired ones
		// of its path, and the kernel's entry goes.
		addTo(r.retired, p, &c)
		r.retiredSeen[p] = r.round
		r.gone[id] = goneCgroup{path: p, round: r.round}
		forget = append(forget, id)
	}
	r.known = known
	for id, g := range r.gone {
		if r.round-g.round > goneRounds {
			delete(r.gone, id)
		}
	}
	for id := range r.unlisted {
		if _, ok := counts[id]; !ok {
			delete(r.unlisted, id)
		}
	}
	// Retired counts of a path that has been gone for goneRounds move to
	// the nearest ancestor that exists; until then a cgroup made again
	// under the path goes on from them.
	for p, c := range r.retired {
		if exists[p] {
			r.retiredSeen[p] = r.round
			continue
		}
		if r.round-r.retiredSeen[p] <= goneRounds {
			continue
		}
		delete(r.retired, p)
		delete(r.retiredSeen, p)
		q := p
		for q != "/" && !exists[q] {
			q = path.Dir(q)
		}
		addTo(r.retired, q, c)
		r.retiredSeen[q] = r.round
	}
	totals := make(map[string]Counts, len(own)+len(r.retired))
	for _, m := range []map[string]*Counts{own, r.retired} {
		for p, c := range m {
			for q := p; ; q = path.Dir(q) {
				if exists[q] {
					t := totals[q]
					t.Add(c)
					totals[q] = t
				}
				if q == "/" || q == "." {
					break
				}
			}
		}
	}
	r.addBase(totals, exists)
	r.last = totals
	// Deleting after the counts moved: a switch in between is lost, and
	// none comes once a cgroup is gone but a zombie's last.
	r.counts.Forget(forget)
	return totals, nil
}

// addBase adds what an earlier daemon served to the totals of each path
// that exists. A path gone for goneRounds rounds loses its base, as
// retired counts move on: its ancestors' bases hold it already.
func (r *Rollup) addBase(totals map[string]Counts, exists map[string]bool) {
	for p, b := range r.base {
		if !exists[p] {
			if r.round-r.baseSeen[p] > goneRounds {
				delete(r.base, p)
				delete(r.baseSeen, p)
			}
			continue
		}
		r.baseSeen[p] = r.round
		t := totals[p]
		t.Add(&b)
		totals[p] = t
	}
}

// Keep returns what r serves for the pass of s, for the state file: the
// totals of the last read if it was of this pass, else of a new one. A
// failed read keeps the last read's totals, all that was ever served.
// ok is false if there is nothing to keep: no program, or no read yet.
func (r *Rollup) Keep(s *container.Snapshot) (k Kept, ok bool) {
	if r == nil || r.counts == nil {
		return Kept{}, false
	}
	_, _ = r.Totals(s) // a failed read keeps the last read's totals
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		return Kept{}, false
	}
	return Kept{Since: r.sinceLocked(), Totals: r.last}, true
}

// Restore makes r's totals go on from k, what an earlier daemon kept:
// each path's totals from then on add k's, and Since is k's. Call it
// before the first Totals.
func (r *Rollup) Restore(k Kept) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.base = make(map[string]Counts, len(k.Totals))
	r.baseSeen = make(map[string]uint64, len(k.Totals))
	for p, c := range k.Totals {
		r.base[p] = c
		r.baseSeen[p] = r.round
	}
	r.since = k.Since
}

// Since returns since when the totals count: when the program loaded, or
// when the earliest daemon whose totals Restore gave started.
func (r *Rollup) Since() time.Time {
	if r == nil || r.counts == nil {
		return time.Time{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sinceLocked()
}

func (r *Rollup) sinceLocked() time.Time {
	if !r.since.IsZero() {
		return r.since
	}
	return r.counts.Since()
}

// Unattributed returns the number of cgroup ids whose counts were given
// to the root because no pass ever listed them.
func (r *Rollup) Unattributed() uint64 {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unattributed
}

func addTo(m map[string]*Counts, p string, c *Counts) {
	t := m[p]
	if t == nil {
		t = &Counts{}
		m[p] = t
	}
	t.Add(c)
}
