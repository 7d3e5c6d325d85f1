package cgroupfs

// Cgroup is one cgroup's entry in a Listing: its place in the tree, the
// threads that are its own members (not its descendants'), and its own CPU
// counter.
type Cgroup struct {
	// Path is relative to the hierarchy root and starts with "/"; the root
	// itself is "/".
	Path string
	// Parent is the index of the parent cgroup in Listing.Cgroups, or -1
	// for the root. A parent always comes before its children.
	Parent int
	// ID is the inode number of the cgroup's directory, 0 if it could not
	// be read. On cgroup2 it is the cgroup id that the kernel's BPF
	// helpers and the task iterator report; on v1 it identifies the
	// cgroup within its hierarchy the same way.
	ID uint64
	// TIDs are the thread ids listed in the cgroup's own cgroup.threads
	// (v2) or tasks (v1) file.
	TIDs []int32
	// UsageNanoseconds is the cgroup's own CPU counter, descendants
	// included: cpuacct.usage on v1, cpu.stat usage_usec times 1000 on v2.
	// It is valid only when HasUsage is true.
	UsageNanoseconds uint64
	// HasUsage reports whether UsageNanoseconds was read.
	HasUsage bool
	// Bandwidth is the cgroup's CFS bandwidth counters: its own cpu.stat
	// on v2, or on v1 the cpu.stat of the cgroup at the same path in the
	// cpu hierarchy. Absent where that file or its keys are.
	Bandwidth Bandwidth
	// Pressure is the cgroup's CPU pressure from cpu.pressure: its own on
	// v2, or on v1 that of the cgroup at the same path in the v2
	// hierarchy beside it. Absent where that file is.
	Pressure Pressure
	// Err is the first error met reading this cgroup, nil when all of it
	// was read: a thread list that could not be read or parsed (TIDs is
	// then empty), a counter that could not be read (HasUsage, or the
	// Has flags of Bandwidth or Pressure, then false), or a directory
	// whose children could not be listed.
	Err error
	// SubtreeUnread reports that the cgroup's children could not be
	// listed (or the cgroup itself not examined, when ID is 0) for a
	// reason other than removal: its descendants are missing from the
	// listing but not gone, and a reader must keep what it knew of them.
	SubtreeUnread bool
}

// Listing is one pass's view of a cgroup hierarchy. Cgroups[0] is the root
// of the walked hierarchy. A Listing is reused from pass to pass: Cgroups
// and each TIDs slice keep their capacity, so a steady-state walk allocates
// nothing per thread.
type Listing struct {
	Cgroups []Cgroup
	// Errors counts the cgroups whose Err is set.
	Errors int
}

// Reset empties l for the next pass and keeps its capacity.
func (l *Listing) Reset() { l.Cgroups, l.Errors = l.Cgroups[:0], 0 }

// Add appends a cgroup with no threads and returns a pointer to it, reusing
// the TIDs capacity that slot held in an earlier pass. The pointer is valid
// until the next call to Add.
func (l *Listing) Add(path string, parent int) *Cgroup {
	if len(l.Cgroups) < cap(l.Cgroups) {
		l.Cgroups = l.Cgroups[:len(l.Cgroups)+1]
	} else {
		l.Cgroups = append(l.Cgroups, Cgroup{})
	}
	c := &l.Cgroups[len(l.Cgroups)-1]
	*c = Cgroup{Path: path, Parent: parent, TIDs: c.TIDs[:0]}
	return c
}

// trimSlack is how far beyond its length a reused TIDs slice may stay
// before Trim lets it go.
const trimSlack = 1024

// Trim drops the thread-id buffers that are far larger than what they held
// in this pass, so a burst of threads does not pin its memory for the life
// of the listing.
func (l *Listing) Trim() {
	for i := range l.Cgroups {
		if c := &l.Cgroups[i]; cap(c.TIDs) > 2*len(c.TIDs)+trimSlack {
			c.TIDs = append([]int32(nil), c.TIDs...)
		}
	}
	if cap(l.Cgroups) > 2*len(l.Cgroups)+trimSlack {
		l.Cgroups = append([]Cgroup(nil), l.Cgroups...)
	}
}

// UseEarlierUsage sets the CPU counter of every cgroup of l that earlier,
// a listing of the same hierarchy made before l, read too (the same ID) to
// earlier's value: an older reading of a counter that only grows. A
// source whose pass reads its tasks' counters before the walk reads the
// cgroups' uses it where each cgroup's counter must have been read first.
func (l *Listing) UseEarlierUsage(earlier *Listing) {
	before := make(map[uint64]uint64, len(earlier.Cgroups))
	for i := range earlier.Cgroups {
		if c := &earlier.Cgroups[i]; c.ID != 0 && c.HasUsage {
			before[c.ID] = c.UsageNanoseconds
		}
	}
	for i := range l.Cgroups {
		c := &l.Cgroups[i]
		if u, ok := before[c.ID]; ok && c.HasUsage && u <= c.UsageNanoseconds {
			c.UsageNanoseconds = u
		}
	}
}

// Lister produces a Listing. A Lister is owned by one goroutine.
type Lister interface {
	// List fills l, after resetting it, with the current hierarchy. An
	// error means the root could not be read and l must not be used;
	// cgroups removed while being walked are left out without an error.
	List(l *Listing) error
}
