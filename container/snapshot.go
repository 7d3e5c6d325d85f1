package container

import (
	"time"

	"github.com/schedstatd/schedstatd/schedstat"
)

// Counters are the table's own running counts, for self metrics. All but
// Tracked only grow.
type Counters struct {
	// Passes and FailedPasses count passes that completed and passes whose
	// listing failed; AbortedPasses those given up when their context
	// ended.
	Passes, FailedPasses, AbortedPasses uint64
	// Tracked is the number of tasks the table holds, each with one handle.
	Tracked int
	// Exits counts tasks retired: seen gone by a pass, or by an exit record.
	Exits uint64
	// Reuses counts ids that were found held by a new task.
	Reuses uint64
	// ExitEvents counts exit records delivered through Exit;
	// UnattributedExits those whose cgroup was unknown or gone.
	ExitEvents, UnattributedExits uint64
	// Duplicates counts tasks listed twice in one pass (moved mid-walk);
	// Unlisted counts reads of live or zombie tasks that a pass missed.
	Duplicates, Unlisted uint64
	// Rebuilds counts task maps rebuilt to give memory back.
	Rebuilds uint64
	// Unkept is the number of tracked tasks read without a kept fd, when
	// the opener reports it (ProcOpener with an FDBudget).
	Unkept int
	// CgroupErrors counts cgroups, over all passes, that could not be read
	// whole (a thread list or counter that failed other than by removal).
	CgroupErrors uint64
	// ReadErrors counts failed reads by Reason.
	ReadErrors [numReasons]uint64
}

// ReadErrorsFor returns the number of failed reads for reason r.
func (c Counters) ReadErrorsFor(r Reason) uint64 {
	if r < 0 || r >= numReasons {
		return 0
	}
	return c.ReadErrors[r]
}

// CgroupStats is one cgroup's totals in a Snapshot.
type CgroupStats struct {
	// Path is relative to the hierarchy root, "/" for the root.
	Path string
	// Stat sums what every task of the cgroup and its descendants ran,
	// waited and was scheduled, since the table started.
	Stat schedstat.Stat
	// Tasks is the number of live tasks listed in the cgroup and its
	// descendants in the pass.
	Tasks int
	// UsageNanoseconds is the cgroup's own CPU counter, valid when
	// HasUsage is true.
	UsageNanoseconds uint64
	HasUsage         bool
}

// Snapshot is the state after one pass. It is immutable once returned.
type Snapshot struct {
	// Time is when the snapshot was taken.
	Time time.Time
	// Cgroups are in listing order: each parent before its children.
	Cgroups []CgroupStats
	// Counters are the table's counts at the time of the snapshot.
	Counters Counters
}

// Snapshot returns the totals of every cgroup of the last pass. It must be
// called from the goroutine that owns the table.
func (t *Table) Snapshot() *Snapshot {
	s := &Snapshot{
		Time:     time.Now(),
		Cgroups:  make([]CgroupStats, len(t.cgroups.order)),
		Counters: t.Counters(),
	}
	for i, cg := range t.cgroups.order {
		s.Cgroups[i] = CgroupStats{
			Path:             cg.path,
			Stat:             cg.total,
			Tasks:            cg.totalTasks,
			UsageNanoseconds: cg.usage,
			HasUsage:         cg.hasUsage,
		}
	}
	return s
}

// Counters returns the table's counts now.
func (t *Table) Counters() Counters {
	c := t.counters
	c.Tracked = len(t.tasks)
	if o, ok := t.opener.(ProcOpener); ok && o.Budget != nil {
		c.Unkept = o.Budget.Unkept()
	}
	return c
}

// Lookup returns the stats of the cgroup at path, if the snapshot has it.
func (s *Snapshot) Lookup(path string) (CgroupStats, bool) {
	for _, c := range s.Cgroups {
		if c.Path == path {
			return c, true
		}
	}
	return CgroupStats{}, false
}
