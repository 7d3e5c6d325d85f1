package container

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/schedstatd/schedstatd/schedstat"
)

// ErrInvalidState is wrapped by the errors of State.Validate and
// Table.Restore for a state that does not describe a table.
var ErrInvalidState = errors.New("container: invalid state")

// State is what a table needs to continue after the daemon restarts: every
// cgroup's totals and series offsets, every tracked task's identity and the
// counters already credited for it, the retired tasks whose exit records
// may still come (an exit source at sched_process_free writes a record
// seconds after the reap, possibly to the next daemon), and the tombstones
// of removed paths. Exit records waiting for a pass are not kept.
type State struct {
	// Cgroups are the cgroups the table knows, each parent before its
	// children; Cgroups[0] is the root of the walked hierarchy.
	Cgroups []CgroupState
	// Tasks are the tracked tasks.
	Tasks []TaskState
	// Retired are tasks a pass found gone whose exit records had not come:
	// what was credited for each, so that a late record adds only its
	// last stretch.
	Retired []TaskState
	// Tombstones are removed paths whose series a cgroup made again under
	// the path would continue.
	Tombstones []TombstoneState
	// Totals is, for a table of per-cgroup totals (NewCgroupTable), what
	// it credited from its source's totals.
	Totals TotalsState
}

// TotalsState is what a table of per-cgroup totals credited from its
// source, kept only when the source's totals outlive the daemon: a table
// restored over a source with the same Store goes on from Credited, so
// what the source added while no daemon read it counts once.
type TotalsState struct {
	// Store is the source's CgroupSource.Store when the state was taken,
	// 0 if its totals end with it (then Credited is empty).
	Store uint64
	// Credited holds, per cgroup id (0 for what the source could not
	// place), the source's totals the table had credited, in id order.
	Credited []CreditedTotal
}

// CreditedTotal is one cgroup's credited totals in a TotalsState.
type CreditedTotal struct {
	ID   uint64
	Stat schedstat.Stat
}

// CgroupState is one cgroup in a State.
type CgroupState struct {
	// ID is the cgroup's kernel id (the inode of its directory).
	ID uint64
	// Parent is the index of the parent in State.Cgroups, -1 for the root.
	Parent int
	// Path is the cgroup's path, relative to the hierarchy root.
	Path string
	// HoldsPath reports that the series exported under Path are this
	// cgroup's (a removed cgroup not yet folded may share its path with
	// the one made again under it).
	HoldsPath bool
	// Own is what was credited to the cgroup itself, folded descendants
	// included; Base is the offset its series go on from (what the path
	// showed before this cgroup took it over).
	Own, Base schedstat.Stat
	// LateRun is the run time in Own that exit and move records credited
	// after the last pass read the cgroup's counter (Kernel's usage), of
	// tasks that pass read alive or never saw: the daemon stopping feeds
	// the records that come then. The counter does not hold it yet, so a
	// restore fills the cgroup's gap from the counter as if Own were less
	// by it.
	LateRun uint64
	// Kernel are the cgroup's own kernel counters made monotonic, in the
	// order of KernelCounterNames.
	Kernel [NumKernelCounters]KernelCounter
}

// NumKernelCounters is the number of a cgroup's kernel counters a State
// keeps.
const NumKernelCounters = 8

// KernelCounterNames names the kernel counters of CgroupState.Kernel and
// TombstoneState.Kernel, in order: the CPU usage (the oracle), then CFS
// bandwidth and CPU pressure, in nanoseconds or counts.
var KernelCounterNames = [NumKernelCounters]string{"usage", "periods", "throttled_periods", "throttled", "bursts", "burst", "pressure_some", "pressure_full"}

// KernelCounter is one kernel counter made monotonic: the exported value is
// Base plus Last, the last reading; Has reports that it was ever read.
type KernelCounter struct {
	Base, Last uint64
	Has        bool
}

// The State's counters are the table's, in the same order.
var _ = [NumKernelCounters]*monotonic((&kernelCounters{}).all())

// saveKernel returns k's counters for a State.
func saveKernel(k *kernelCounters) (out [NumKernelCounters]KernelCounter) {
	for i, m := range k.all() {
		out[i] = KernelCounter{Base: m.base, Last: m.last, Has: m.has}
	}
	return out
}

// loadKernel returns the counters a State saved.
func loadKernel(in *[NumKernelCounters]KernelCounter) (k kernelCounters) {
	for i, m := range k.all() {
		*m = monotonic{base: in[i].Base, last: in[i].Last, has: in[i].Has}
	}
	return k
}

// TaskState is one tracked task in a State.
type TaskState struct {
	// TID and StartTime (clock ticks since boot) name the task.
	TID       int32
	StartTime uint64
	// Last holds the task's counters at its last good read: what has been
	// credited for it.
	Last schedstat.Stat
	// Cgroup is the index in State.Cgroups of the cgroup its last
	// increase was credited to.
	Cgroup int
}

// TombstoneState is one removed path in a State.
type TombstoneState struct {
	// Path is the removed cgroup's path.
	Path string
	// Stat and Kernel are what its series showed last.
	Stat   schedstat.Stat
	Kernel [NumKernelCounters]KernelCounter
	// RemovedAt is when it was removed, in CLOCK_MONOTONIC nanoseconds
	// (the clock of one boot, which restarts of the daemon share).
	RemovedAt int64
}

// Validate checks that s describes a table: a root first, parents before
// children, distinct non-zero cgroup ids, at most one holder per path,
// distinct positive task ids in known cgroups, tombstones of distinct
// paths that no cgroup holds, and credited totals of distinct ids, kept
// only with a store.
func (s *State) Validate() error {
	if len(s.Cgroups) == 0 {
		return fmt.Errorf("%w: no cgroups", ErrInvalidState)
	}
	ids := make(map[uint64]struct{}, len(s.Cgroups))
	held := make(map[string]struct{}, len(s.Cgroups))
	for i, c := range s.Cgroups {
		switch {
		case i == 0 && c.Parent != -1:
			return fmt.Errorf("%w: root %q has a parent", ErrInvalidState, c.Path)
		case i > 0 && (c.Parent < 0 || c.Parent >= i):
			return fmt.Errorf("%w: cgroup %d (%q) has parent index %d", ErrInvalidState, i, c.Path, c.Parent)
		case c.ID == 0:
			return fmt.Errorf("%w: cgroup %q has id 0", ErrInvalidState, c.Path)
		case c.Path == "":
			return fmt.Errorf("%w: cgroup %d has no path", ErrInvalidState, c.ID)
		}
		if _, dup := ids[c.ID]; dup {
			return fmt.Errorf("%w: cgroup id %d twice", ErrInvalidState, c.ID)
		}
		ids[c.ID] = struct{}{}
		if c.HoldsPath {
			if _, dup := held[c.Path]; dup {
				return fmt.Errorf("%w: path %q held twice", ErrInvalidState, c.Path)
			}
			held[c.Path] = struct{}{}
		}
	}
	tids := make(map[int32]struct{}, len(s.Tasks))
	for _, x := range s.Tasks {
		if x.TID <= 0 || x.Cgroup < 0 || x.Cgroup >= len(s.Cgroups) {
			return fmt.Errorf("%w: task %d in cgroup index %d", ErrInvalidState, x.TID, x.Cgroup)
		}
		if _, dup := tids[x.TID]; dup {
			return fmt.Errorf("%w: task %d twice", ErrInvalidState, x.TID)
		}
		tids[x.TID] = struct{}{}
	}
	for _, x := range s.Retired {
		if x.TID <= 0 || x.Cgroup < 0 || x.Cgroup >= len(s.Cgroups) {
			return fmt.Errorf("%w: retired task %d in cgroup index %d", ErrInvalidState, x.TID, x.Cgroup)
		}
	}
	for _, ts := range s.Tombstones {
		if _, dup := held[ts.Path]; dup || ts.Path == "" {
			return fmt.Errorf("%w: tombstone %q held or repeated", ErrInvalidState, ts.Path)
		}
		held[ts.Path] = struct{}{}
	}
	if s.Totals.Store == 0 && len(s.Totals.Credited) > 0 {
		return fmt.Errorf("%w: credited totals of no store", ErrInvalidState)
	}
	credited := make(map[uint64]struct{}, len(s.Totals.Credited))
	for _, c := range s.Totals.Credited {
		if _, dup := credited[c.ID]; dup {
			return fmt.Errorf("%w: credited totals of cgroup %d twice", ErrInvalidState, c.ID)
		}
		credited[c.ID] = struct{}{}
	}
	return nil
}

// State returns what the table needs to continue after a restart. It must
// be called from the goroutine that owns the table. Before the first pass
// of a table that was not restored, it returns a State without cgroups.
func (t *Table) State() State {
	var s State
	t.StateInto(&s)
	return s
}

// StateInto is State that fills s, reusing its slices' capacity.
func (t *Table) StateInto(s *State) {
	clear(s.Cgroups)
	s.Cgroups, s.Tasks, s.Retired, s.Tombstones = s.Cgroups[:0], s.Tasks[:0], s.Retired[:0], s.Tombstones[:0]
	s.Totals = TotalsState{Credited: s.Totals.Credited[:0]}
	set := &t.cgroups
	var root *cgroupState
	switch {
	case len(set.order) > 0:
		root = set.order[0]
	case t.restore != nil:
		root = t.restore.root
	default:
		return
	}
	// Indexes are kept in the cgroups themselves while the State is
	// built: one look-up per task, without a map.
	gen := t.stateGen + 1
	t.stateGen = gen
	mark := func(cg *cgroupState, i int) { cg.stateIndex, cg.stateGen = i, gen }
	has := func(cg *cgroupState) bool { return cg.stateGen == gen }
	var emit func(cg *cgroupState) int
	emit = func(cg *cgroupState) int {
		if has(cg) {
			return cg.stateIndex
		}
		parent := -1
		if cg != root {
			p := cg.parent
			for p != nil && set.byID[p.id] != p {
				p = p.parent
			}
			if p == nil {
				p = root
			}
			parent = emit(p)
		}
		mark(cg, len(s.Cgroups))
		s.Cgroups = append(s.Cgroups, CgroupState{
			ID: cg.id, Parent: parent, Path: cg.path,
			HoldsPath: set.byPath[cg.path] == cg,
			Own:       cg.own, Base: cg.base, LateRun: cg.own.RunNanoseconds - min(cg.readRun, cg.own.RunNanoseconds),
			Kernel: saveKernel(&cg.kernel),
		})
		return cg.stateIndex
	}
	emit(root)
	for _, cg := range set.order {
		if set.byID[cg.id] == cg {
			emit(cg)
		}
	}
	if len(s.Cgroups) < len(set.byID) {
		// Cgroups an aborted pass did not list: in id order, for a
		// file that does not change when nothing did.
		var rest []*cgroupState
		for _, cg := range set.byID {
			if !has(cg) {
				rest = append(rest, cg)
			}
		}
		slices.SortFunc(rest, func(a, b *cgroupState) int { return cmp.Compare(a.id, b.id) })
		for _, cg := range rest {
			emit(cg)
		}
	}
	cgIndex := func(cg *cgroupState) int {
		if cg = cg.live(); has(cg) {
			return cg.stateIndex
		}
		return 0
	}
	if cap(s.Tasks) < len(t.tasks) {
		s.Tasks = make([]TaskState, 0, len(t.tasks)+len(t.tasks)/8)
	}
	for tid, e := range t.tasks {
		s.Tasks = append(s.Tasks, TaskState{TID: tid, StartTime: e.start, Last: e.last, Cgroup: cgIndex(e.cg)})
	}
	if t.restore != nil {
		// Saved tasks no pass has found yet are still owed.
		for tid, r := range t.restore.tasks {
			if _, ok := t.tasks[tid]; !ok {
				s.Tasks = append(s.Tasks, TaskState{TID: tid, StartTime: r.start, Last: r.last, Cgroup: cgIndex(r.cg)})
			}
		}
	}
	for _, gen := range t.graves.gens {
		for id, g := range gen.graves {
			s.Retired = append(s.Retired, TaskState{TID: id.tid, StartTime: id.start, Last: g.last, Cgroup: cgIndex(g.cg)})
		}
	}
	if t.restore != nil {
		for id, r := range t.restore.retired {
			s.Retired = append(s.Retired, TaskState{TID: id.tid, StartTime: id.start, Last: r.last, Cgroup: cgIndex(r.cg)})
		}
	}
	for path, ts := range set.tombs.byPath {
		if _, held := set.byPath[path]; held {
			continue
		}
		s.Tombstones = append(s.Tombstones, TombstoneState{Path: path, Stat: ts.stat, Kernel: saveKernel(&ts.kernel), RemovedAt: ts.at})
	}
	slices.SortFunc(s.Tombstones, func(a, b TombstoneState) int {
		return cmp.Or(cmp.Compare(a.RemovedAt, b.RemovedAt), cmp.Compare(a.Path, b.Path))
	})
	t.totalsInto(&s.Totals)
}
