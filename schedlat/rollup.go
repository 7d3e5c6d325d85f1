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
// snapshot s that has any, its counts with its descendants', by path.
func (r *Rollup) Totals(s *container.Snapshot) (map[string]Counts, error) {
	if r == nil || r.counts == nil {
		return nil, nil
	}
	// The read is under the lock: a read older than the last round's
	// would find counts already moved.
	r.mu.Lock()
	defer r.mu.Unlock()
	counts, err := r.counts.Read()
	if err != nil {
		return nil, err
	}
	// Rounds are passes: scrapes that share a pass do not age anything.
	newRound := r.round == 0 || s.Counters.Passes != r.lastPass
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
	// Deleting after the counts moved: a switch in between is lost, and
	// none comes once a cgroup is gone but a zombie's last.
	r.counts.Forget(forget)
	return totals, nil
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
