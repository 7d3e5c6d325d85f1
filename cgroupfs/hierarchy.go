package cgroupfs

import (
	"fmt"
	"path/filepath"
)

// Version is the version of a cgroup hierarchy: V1 for a hierarchy of the
// legacy cgroup filesystem, V2 for the unified one (cgroup2).
type Version int

// The cgroup hierarchy versions.
const (
	V1 Version = 1
	V2 Version = 2
)

// String returns "v1" or "v2".
func (v Version) String() string {
	return fmt.Sprintf("v%d", int(v))
}

// Unified is the hierarchy name Open takes, and Name reports, for the v2
// hierarchy: the root itself on a pure v2 node, <root>/unified on a hybrid
// one.
const Unified = "unified"

// Hierarchy is a cgroup hierarchy found by Open. List walks it; the other
// methods describe it and may be called from any goroutine. List keeps
// buffers and a cache of paths between passes, so one goroutine at a time
// may call it.
type Hierarchy struct {
	layout layout
	files  kernelFiles
	w      walker
}

var _ Lister = (*Hierarchy)(nil)

// Open finds the cgroup hierarchy to walk under root, the cgroup mount
// root (/sys/fs/cgroup on most nodes, or where a container mounted the
// host's). With name "", a root that is a cgroup2 mount is walked as a
// pure v2 node; a root holding v1 mounts (a tmpfs, as on v1 and hybrid
// nodes) has its cpuacct hierarchy walked, or cpu, or name=systemd,
// whichever is found first, and a root holding only a cgroup2 mount at
// <root>/unified has that walked. A root that is itself a v1 mount is
// walked as it is. A non-empty name chooses the hierarchy: Unified, or a
// v1 one by directory or subsystem name ("cpuacct", "cpu", "systemd",
// "name=systemd", "memory"). A root that does not exist or is not a cgroup
// filesystem, or a hierarchy that is not mounted, is an error naming the
// path; it wraps the system error, ErrNotCgroup or ErrNoHierarchy.
func Open(root, name string) (*Hierarchy, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("cgroupfs: root %s: %w", root, err)
	}
	l, err := detect(abs, name, osProbe)
	if err != nil {
		return nil, err
	}
	h := newHierarchy(l)
	h.useKernelFiles(findKernelFiles(l, osProbe))
	return h, nil
}

// newHierarchy returns a Hierarchy for l without checking that its
// directories are cgroup mounts; tests walk plain directories with it.
func newHierarchy(l layout) *Hierarchy {
	h := &Hierarchy{layout: l}
	h.w = walker{
		dir:    l.dir,
		v2:     l.version == V2,
		mirror: l.usage.mirror,
		kernfs: l.kernfs,
	}
	if l.usage.mirror == "" {
		h.w.usageFile = l.usage.file
	}
	return h
}

// Version returns the version of the walked hierarchy.
func (h *Hierarchy) Version() Version { return h.layout.version }

// Name returns the walked hierarchy's name: Unified, or the v1 name Open
// found or was given ("cpuacct", "cpu", "systemd", ...).
func (h *Hierarchy) Name() string { return h.layout.name }

// Dir returns the absolute directory of the walked hierarchy's root
// cgroup; Listing paths are relative to it.
func (h *Hierarchy) Dir() string { return h.layout.dir }

// UnifiedDir returns the absolute directory of the v2 hierarchy under the
// root, whether or not it is the one walked, or "" when there is none. A
// v2 cgroup id (as bpf_get_current_cgroup_id returns) is the inode number
// of a directory below it.
func (h *Hierarchy) UnifiedDir() string { return h.layout.unified }

// ThreadsFile returns the name of the file each cgroup's threads are read
// from: "cgroup.threads" on v2, "tasks" on v1.
func (h *Hierarchy) ThreadsFile() string { return threadsFile(h.layout.version == V2) }

// UsageFile returns the absolute path of the root cgroup's CPU counter
// file ("cpu.stat" on v2, "cpuacct.usage" on v1), whose siblings in each
// cgroup below give Cgroup.UsageNanoseconds; or "" when the walked v1
// hierarchy has no counter, nor a cpuacct hierarchy beside it. When the
// counter comes from the cpuacct hierarchy beside the walked one, the path
// is in that hierarchy.
func (h *Hierarchy) UsageFile() string {
	u := h.layout.usage
	switch {
	case u.file == "":
		return ""
	case u.mirror != "":
		return filepath.Join(u.mirror, u.file)
	}
	return filepath.Join(h.layout.dir, u.file)
}

// List fills l, after resetting it, with one walk of the hierarchy: every
// cgroup directory, parents before children, with its own threads and its
// CPU counter. Cgroups removed during the walk are left out. Other errors
// below the root leave the cgroup in l with what could be read and its Err
// set, and are counted in l.Errors. An error reading the root is returned,
// and l is then empty. A steady-state pass allocates nothing.
func (h *Hierarchy) List(l *Listing) error { return h.w.list(l, false) }

// ListTree is List without the thread lists: every cgroup with its ID and
// CPU counter, and no TIDs. It is for task sources that learn each
// thread's cgroup another way, such as the BPF task iterator, and costs
// one read per cgroup less.
func (h *Hierarchy) ListTree(l *Listing) error { return h.w.list(l, true) }
