package container

import (
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
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
	// CgroupErrors counts cgroups, over all passes, that could not be read
	// whole (a thread list, counter or directory that failed other than
	// by removal), and CgroupReadErrors the same by Reason.
	CgroupErrors     uint64
	CgroupReadErrors [numReasons]uint64
	// PartialPasses counts passes that could not read the whole tree:
	// what they could not see was kept as it was.
	PartialPasses uint64
	// CgroupsRead and CgroupsUnread are the last pass's cgroups read
	// whole and those it could not read whole or kept unseen.
	CgroupsRead, CgroupsUnread int
	// PendingExits is the number of exit records waiting for a pass to
	// list their cgroup; PendingOverflows counts those that could not
	// wait, the queue being full.
	PendingExits     int
	PendingOverflows uint64
	// RetiredTracked is the number of retired tasks remembered for their
	// exit records; RetiredEvicted counts those forgotten before the exit
	// source had delivered their records, past the bound. RetiredUnrecorded
	// counts those forgotten once it had delivered every record that could
	// have been theirs, none being: the exit source's ring had no room for
	// it, or the kernel sent none (exitcapture's README); the time such a
	// task ran after the last pass that read it is not in the totals.
	RetiredTracked    int
	RetiredEvicted    uint64
	RetiredUnrecorded uint64
	// ReadErrors counts failed reads by Reason.
	ReadErrors [numReasons]uint64
	// UnattributedTotals counts cgroups whose totals, kept by a source that
	// aggregates in the kernel, grew after the cgroup was removed, or
	// before a pass could list it: the increase went to the nearest
	// ancestor that exists. TotalsForgotten counts removed cgroups whose
	// totals the source was told to drop.
	UnattributedTotals, TotalsForgotten uint64
	// Migrations counts move records delivered through Migrate;
	// StaleMigrations those older than what a pass had read of the task,
	// which changed nothing; MigrationOverflows those not kept, too many
	// tasks waiting; UnattributedMigrations stretches before a move whose
	// cgroup the source could not name, credited to the root. MovedTasks
	// is the number of tasks whose moves wait for a pass to see them.
	Migrations, StaleMigrations, MigrationOverflows, UnattributedMigrations uint64
	MovedTasks                                                              int
}

// CgroupReadErrorsFor returns the number of cgroups that could not be read
// whole for reason r.
func (c Counters) CgroupReadErrorsFor(r Reason) uint64 {
	if r < 0 || r >= numReasons {
		return 0
	}
	return c.CgroupReadErrors[r]
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
	// ID is the cgroup's id: the inode of its directory in the walked
	// hierarchy, as BPF programs name it.
	ID uint64
	// Stat sums what every task of the cgroup and its descendants ran,
	// waited and was scheduled, since the table started.
	Stat schedstat.Stat
	// Tasks is the number of live tasks listed in the cgroup and its
	// descendants in the pass.
	Tasks int
	// UsageNanoseconds is the cgroup's own CPU counter, valid when
	// HasUsage is true. It never falls: a counter that starts over (the
	// cgroup made again under the same path, or reset) goes on from the
	// value shown before.
	UsageNanoseconds uint64
	HasUsage         bool
	// ReadErrors counts the passes that could not read this cgroup whole.
	ReadErrors uint64
	// Unread reports that the last pass could not read this cgroup whole,
	// or could not see it at all and kept its last state.
	Unread bool
	// Bandwidth and Pressure are the cgroup's own CFS bandwidth and CPU
	// pressure counters as last read, each valid where its Has flags are
	// set. Like UsageNanoseconds they never fall.
	Bandwidth cgroupfs.Bandwidth
	Pressure  cgroupfs.Pressure
}

// Snapshot is the state after one pass. It is immutable once returned.
type Snapshot struct {
	// Time is when the snapshot was taken.
	Time time.Time
	// Cgroups are in listing order: each parent before its children.
	Cgroups []CgroupStats
	// Counters are the table's counts at the time of the snapshot.
	Counters Counters
	// PartialErr is the first error of the pass if it could not read the
	// whole tree, and nil after a complete pass.
	PartialErr error
}

// Snapshot returns the totals of every cgroup of the last pass. It must be
// called from the goroutine that owns the table.
func (t *Table) Snapshot() *Snapshot {
	s := &Snapshot{
		Time:       time.Now(),
		Cgroups:    make([]CgroupStats, len(t.cgroups.order)),
		Counters:   t.Counters(),
		PartialErr: t.partialErr,
	}
	for i, cg := range t.cgroups.order {
		s.Cgroups[i] = CgroupStats{
			Path:             cg.path,
			ID:               cg.id,
			Stat:             cg.exported(),
			Tasks:            cg.totalTasks,
			UsageNanoseconds: cg.kernel.usage.value(),
			HasUsage:         cg.kernel.usage.has,
			ReadErrors:       cg.errors,
			Unread:           cg.lastErr || cg.subtreeUnread,
			Bandwidth:        cg.kernel.bandwidth(),
			Pressure:         cg.kernel.pressure(),
		}
	}
	return s
}

// Counters returns the table's counts now.
func (t *Table) Counters() Counters {
	c := t.counters
	c.Tracked = len(t.tasks)
	if t.totals != nil {
		c.Tracked = t.totals.tasks
	}
	c.PendingExits = len(t.pending.list)
	c.RetiredTracked, c.RetiredEvicted, c.RetiredUnrecorded = t.graves.len(), t.graves.evicted, t.graves.unrecorded
	c.MovedTasks = t.moved.len()
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
