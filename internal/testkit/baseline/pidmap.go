package baseline

import (
	"fmt"

	"github.com/schedstatd/schedstatd/schedstat"
)

// PidMap is one cgroup's schedstat state as cAdvisor keeps it: the last
// counters read for each id, keyed by the id alone. It is not safe for
// concurrent use.
type PidMap struct {
	read  ReadFunc
	prune bool
	cache map[int32]*schedstat.Stat
	// saved holds the last counters of ids a pruned map let go.
	saved schedstat.Stat
	// Reads counts calls of the ReadFunc.
	Reads int
}

// NewUnpruned returns a map that never forgets an id: cAdvisor before its
// fix. Its memory and the cost of its sum grow with every id it ever read.
func NewUnpruned(read ReadFunc) *PidMap {
	return &PidMap{read: read, cache: make(map[int32]*schedstat.Stat)}
}

// NewPruned returns a map that saves and forgets the ids a pass did not
// list: cAdvisor after its fix.
func NewPruned(read ReadFunc) *PidMap {
	return &PidMap{read: read, prune: true, cache: make(map[int32]*schedstat.Stat)}
}

// Update reads every id in pids, stores its counters under the id and
// returns the cgroup's totals: the sum of every stored entry, plus, for a
// pruned map, what ids already let go had. A failed read fails the whole
// update, as in cAdvisor.
func (m *PidMap) Update(pids []int32) (schedstat.Stat, error) {
	var alive map[int32]struct{}
	if m.prune {
		// cAdvisor makes this set anew on every pass.
		alive = make(map[int32]struct{}, len(pids))
	}
	for _, pid := range pids {
		m.Reads++
		st, err := m.read(pid)
		if err != nil {
			return schedstat.Stat{}, fmt.Errorf("couldn't read scheduler statistics for process %d: %w", pid, err)
		}
		if alive != nil {
			alive[pid] = struct{}{}
		}
		e, ok := m.cache[pid]
		if !ok {
			e = new(schedstat.Stat)
			m.cache[pid] = e
		}
		*e = st
	}
	total := m.saved
	for pid, e := range m.cache {
		total = total.Add(*e)
		if alive == nil {
			continue
		}
		if _, ok := alive[pid]; !ok {
			m.saved = m.saved.Add(*e)
			delete(m.cache, pid)
		}
	}
	return total, nil
}

// Len returns the number of ids stored.
func (m *PidMap) Len() int { return len(m.cache) }
