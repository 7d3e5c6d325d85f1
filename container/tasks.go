package container

import "github.com/schedstatd/schedstatd/schedstat"

// TaskStats is one tracked task as the last pass left it.
type TaskStats struct {
	// TID and StartTime (clock ticks since boot) are the task's identity.
	TID       int32
	StartTime uint64
	// Stat is the task's own counters since it started, as the kernel
	// showed them at the last good read: what /proc/<tid>/schedstat says.
	Stat schedstat.Stat
	// CgroupID is the kernel id of the cgroup the task was last credited
	// to, and CgroupPath that cgroup's path (a label).
	CgroupID   uint64
	CgroupPath string
}

// CgroupTasks appends to out every task that the last pass credited to the
// cgroup of kernel id id or to one of its descendants, as the cgroup's
// series include its descendants, and returns out with that cgroup's path.
// ok is false when the last pass neither listed nor kept the cgroup. It
// only reads, and must be called from the goroutine that owns the table.
func (t *Table) CgroupTasks(id uint64, out []TaskStats) (path string, tasks []TaskStats, ok bool) {
	want := t.listed(t.cgroups.byID[id])
	if want == nil {
		return "", out, false
	}
	for tid, e := range t.tasks {
		if e.cg == nil {
			continue
		}
		if cg := e.cg.live(); cg.within(want) {
			out = append(out, TaskStats{TID: tid, StartTime: e.start, Stat: e.last, CgroupID: cg.id, CgroupPath: cg.path})
		}
	}
	return want.path, out, true
}

// listed returns cg if the last pass listed or kept it and it was not
// removed since, else nil.
func (t *Table) listed(cg *cgroupState) *cgroupState {
	if cg == nil || cg.seen != t.pass || cg.folded != nil {
		return nil
	}
	return cg
}

// within reports whether cg is want or one of its descendants.
func (cg *cgroupState) within(want *cgroupState) bool {
	for c := cg; c != nil && c.depth >= want.depth; c = c.parent {
		if c == want {
			return true
		}
	}
	return false
}

// CgroupID returns the kernel id of the cgroup at path in the last pass,
// and whether there is one. It must be called from the goroutine that
// owns the table.
func (t *Table) CgroupID(path string) (uint64, bool) {
	cg := t.listed(t.cgroups.byPath[path])
	if cg == nil {
		return 0, false
	}
	return cg.id, true
}

// CgroupRef names one cgroup of a pass: its kernel id and its path.
type CgroupRef struct {
	ID   uint64
	Path string
}

// TracksTasks reports whether the table tracks tasks; a table of
// per-cgroup totals (NewCgroupTable) does not, and its CgroupTasks finds
// none: CgroupSubtree names the cgroups whose threads to read instead.
func (t *Table) TracksTasks() bool { return t.totals == nil }

// CgroupSubtree appends to out the cgroup of kernel id id and each of its
// descendants that the last pass listed, parents first, and returns out
// with that cgroup's path; ok is false as for CgroupTasks. It only reads,
// and must be called from the goroutine that owns the table.
func (t *Table) CgroupSubtree(id uint64, out []CgroupRef) (path string, cgroups []CgroupRef, ok bool) {
	want := t.listed(t.cgroups.byID[id])
	if want == nil {
		return "", out, false
	}
	for _, cg := range t.cgroups.order {
		if t.listed(cg) != nil && cg.within(want) {
			out = append(out, CgroupRef{ID: cg.id, Path: cg.path})
		}
	}
	return want.path, out, true
}
