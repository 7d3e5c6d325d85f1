package container

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// A source that aggregates in the kernel delivers no tasks: it keeps, per
// cgroup id, the totals of every task it credited there, and the table
// credits each cgroup the increase of those totals since the pass before.
// The rules of tasks hold by construction in the kernel (each task's last
// visit dies with it, a task is credited where it is at each visit and at
// its exit); the rules of cgroups hold here, as for exit records: totals
// of a cgroup the pass lists go to it; those of a cgroup below a subtree
// the pass could not read wait for a pass that can; those of a cgroup the
// pass shows removed go to its nearest listed ancestor, counted in
// Counters.UnattributedTotals. The source drops a removed cgroup's totals
// once the table has credited them and forgetAfter has passed (Forget),
// so its memory is bounded by the cgroups that exist plus those removed
// recently.

// forgetAfter is how long, in nanoseconds, the totals of a removed cgroup
// are kept after the pass that found it removed: tasks of a removed cgroup
// (zombies reaped late) may still add to them, and the table credits
// those additions to the ancestor until then.
const forgetAfter = int64(30e9)

// CgroupTotal is one cgroup's totals as a CgroupSource keeps them.
type CgroupTotal struct {
	// ID is the cgroup's kernel id in the walked hierarchy (the inode of
	// its directory, as cgroupfs.Cgroup.ID); 0 holds what the source
	// could not place in a cgroup, credited to the root.
	ID uint64
	// Stat is what the source credited to the cgroup since it began
	// keeping it; it never falls.
	Stat schedstat.Stat
	// Tasks is the number of live tasks the source's last read found in
	// the cgroup itself.
	Tasks int
	// Ancestors are the ids of the cgroup's ancestors, nearest first,
	// zero past the last one known: they place the totals of a cgroup
	// removed before a pass could list it.
	Ancestors [MaxExitAncestors]uint64
}

// CgroupSource is a source of per-cgroup totals. Its Lister, which the
// table is made with, reads the totals before it walks the hierarchy, so
// every cgroup the totals name existed at the start of the walk: one the
// walk does not list was removed.
type CgroupSource interface {
	// Totals returns the totals of the last read. The table reads the
	// slice during Pass only.
	Totals() []CgroupTotal
	// Forget drops the totals of id, a cgroup found removed, and returns
	// them as they were at that moment, with whatever was added since the
	// last read; ok is false if the source had none.
	Forget(id uint64) (final schedstat.Stat, ok bool)
	// Exits returns how many tasks' exits the source has credited so
	// far, at the last read: the table's Counters.Exits.
	Exits() uint64
	// Store identifies the kernel objects the totals are kept in, when
	// they outlive the source (pinned maps, which a source opened after a
	// restart of the daemon may go on with), and is 0 when they end with
	// it. Two stores with the same non-zero value hold the same totals.
	Store() uint64
}

// NewCgroupTable returns a table that lists cgroups with lister and takes
// the cgroups' totals from src instead of reading tasks.
func NewCgroupTable(lister cgroupfs.Lister, src CgroupSource) *Table {
	t := NewTable(lister, noTasks{})
	t.totals = &totalsState{src: src, credited: make(map[uint64]schedstat.Stat)}
	return t
}

// noTasks opens no task: a table of totals tracks none.
type noTasks struct{}

func (noTasks) Open(tid int32) (TaskHandle, error) {
	return nil, fmt.Errorf("task %d: %w", tid, unix.ESRCH)
}

// totalsState is what a table of totals keeps between passes.
type totalsState struct {
	src CgroupSource
	// credited holds, per cgroup id, the totals credited so far.
	credited map[uint64]schedstat.Stat
	deletes  int // deletes from credited since it was made
	// removed are the ids found removed, oldest first, with the pass
	// clock then and where their totals go.
	removed   []removedTotals
	isRemoved map[uint64]bool
	tasks     int // live tasks of the last read
}

type removedTotals struct {
	id        uint64
	at        int64
	ancestors [MaxExitAncestors]uint64
}

// creditTotals credits, after begin matched the listing, each cgroup's
// increase since the last pass.
func (t *Table) creditTotals() {
	ts := t.totals
	ts.tasks = 0
	t.counters.Exits = max(t.counters.Exits, ts.src.Exits())
	now := t.clock()
	for _, tot := range ts.src.Totals() {
		inc := tot.Stat.Since(ts.credited[tot.ID])
		if cg := t.cgroups.byID[tot.ID]; tot.ID != 0 && cg != nil && cg.seen == t.pass {
			cg.own = cg.own.Add(inc)
			cg.tasks += tot.Tasks
			ts.tasks += tot.Tasks
			ts.credited[tot.ID] = tot.Stat
			continue
		}
		x := Exit{Cgroup: tot.ID, Ancestors: tot.Ancestors}
		anc := t.cgroups.listedAncestor(&x, t.pass)
		if anc == nil && t.cgroups.unread > 0 || anc != nil && anc.subtreeUnread {
			continue // perhaps below what this pass could not read
		}
		if anc == nil {
			anc = t.cgroups.order[0]
		}
		if inc != (schedstat.Stat{}) {
			anc.own = anc.own.Add(inc)
			if tot.ID != 0 {
				t.counters.UnattributedTotals++
			}
		}
		ts.credited[tot.ID] = tot.Stat
		if tot.ID != 0 && !ts.isRemoved[tot.ID] {
			if ts.isRemoved == nil {
				ts.isRemoved = make(map[uint64]bool)
			}
			ts.isRemoved[tot.ID] = true
			ts.removed = append(ts.removed, removedTotals{id: tot.ID, at: now, ancestors: tot.Ancestors})
		}
	}
}

// forgetTotals has the source drop the totals of cgroups removed more than
// forgetAfter ago, crediting what was added since the last read to the
// nearest listed ancestor.
func (t *Table) forgetTotals() {
	ts := t.totals
	now := t.clock()
	n := 0
	for n < len(ts.removed) && now-ts.removed[n].at >= forgetAfter {
		r := ts.removed[n]
		x := Exit{Cgroup: r.id, Ancestors: r.ancestors}
		anc := t.cgroups.listedAncestor(&x, t.pass)
		if anc == nil && t.cgroups.unread > 0 || anc != nil && anc.subtreeUnread {
			break // a complete pass forgets it
		}
		if anc == nil {
			anc = t.cgroups.order[0]
		}
		if final, ok := ts.src.Forget(r.id); ok {
			anc.live().own = anc.live().own.Add(final.Since(ts.credited[r.id]))
		}
		delete(ts.credited, r.id)
		delete(ts.isRemoved, r.id)
		ts.deletes++
		t.counters.TotalsForgotten++
		n++
	}
	if n > 0 {
		m := copy(ts.removed, ts.removed[n:])
		clear(ts.removed[m:])
		ts.removed = ts.removed[:m]
	}
	if ts.deletes > len(ts.credited)+minRebuild {
		m := make(map[uint64]schedstat.Stat, len(ts.credited))
		for id, st := range ts.credited {
			m[id] = st
		}
		ts.credited = m
		r := make(map[uint64]bool, len(ts.isRemoved))
		for id := range ts.isRemoved {
			r[id] = true
		}
		ts.isRemoved = r
		ts.deletes = 0
	}
}

// totalsInto sets out to what a table of totals credited, if its source's
// totals outlive it.
func (t *Table) totalsInto(out *TotalsState) {
	if t.totals == nil {
		return
	}
	if out.Store = t.totals.src.Store(); out.Store == 0 {
		return
	}
	for id, st := range t.totals.credited {
		out.Credited = append(out.Credited, CreditedTotal{ID: id, Stat: st})
	}
	slices.SortFunc(out.Credited, func(a, b CreditedTotal) int { return cmp.Compare(a.ID, b.ID) })
}

// restoreTotals goes on from what a saved table credited, if its source
// keeps its totals in the store the state names (RestoreStats.TotalsContinued);
// otherwise the source's totals start anew and its owner primes it.
func (t *Table) restoreTotals(s *TotalsState) {
	if t.totals == nil || s.Store == 0 || s.Store != t.totals.src.Store() {
		return
	}
	for _, c := range s.Credited {
		t.totals.credited[c.ID] = c.Stat
	}
	t.restored.TotalsContinued = true
}
