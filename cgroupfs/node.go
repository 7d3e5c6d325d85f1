package cgroupfs

import "strings"

// node is a cgroup directory the walker has seen, kept between passes so
// that a steady-state pass builds no strings: the path a Listing reports
// and the names openat needs are made once, when the cgroup first appears.
// Nodes of removed cgroups are dropped by the pass that no longer finds
// them, so the cache holds what the last pass saw and no more.
//
// A cgroup's own files are opened relative to its parent's directory fd
// ("name/tasks"), so a cgroup without children is never opened as a
// directory. The root's names are absolute.
type node struct {
	name    string // directory name; "" for the root
	rel     string // path relative to the hierarchy root, "/" for the root
	dir     []byte // name, or the root's absolute path, and a NUL
	threads []byte // name/tasks or name/cgroup.threads, and a NUL
	usage   []byte // name/<counter file>, or its absolute path in the mirror hierarchy, and a NUL; nil if none
	// bandwidth and pressure are the names of the cgroup's cpu.stat (v1)
	// and cpu.pressure in the same way, nil where there are none.
	bandwidth, pressure []byte
	// usageFD, bandwidthFD and pressureFD hold those files open between
	// passes when the walker keeps files (kept.go).
	usageFD, bandwidthFD, pressureFD keptFD
	kids                             map[string]*node
	peak                             int    // most kids held since kids was last rebuilt
	seen                             uint64 // the last pass that listed this node
}

// newRoot returns the node of the hierarchy root.
func (w *walker) newRoot() *node {
	n := &node{rel: "/", usageFD: noFD, bandwidthFD: noFD, pressureFD: noFD}
	w.setNames(n, w.dir)
	return n
}

// setNames fills the NUL-terminated names of n, whose directory is base
// below its parent's (or, for the root, absolute).
func (w *walker) setNames(n *node, base string) {
	n.dir = cstring(base)
	n.threads = cstring(base + "/" + threadsFile(w.v2))
	switch {
	case w.mirror != "" && n.rel == "/":
		n.usage = cstring(w.mirror + "/" + usageFileV1)
	case w.mirror != "":
		n.usage = cstring(w.mirror + n.rel + "/" + usageFileV1)
	case w.usageFile != "":
		n.usage = cstring(base + "/" + w.usageFile)
	}
	n.bandwidth = w.bandwidth.name(base, n.rel)
	n.pressure = w.pressure.name(base, n.rel)
}

// kid returns the child of n called name, making and caching it when the
// cgroup is new, and marks it seen in this pass. Looking up an existing
// child allocates nothing.
func (w *walker) kid(n *node, name []byte) *node {
	if k, ok := n.kids[string(name)]; ok {
		k.seen = w.pass
		return k
	}
	k := &node{name: string(name), seen: w.pass, usageFD: noFD, bandwidthFD: noFD, pressureFD: noFD}
	if n.rel == "/" {
		k.rel = "/" + k.name
	} else {
		k.rel = n.rel + "/" + k.name
	}
	w.setNames(k, k.name)
	if n.kids == nil {
		n.kids = make(map[string]*node)
	}
	n.kids[k.name] = k
	n.peak = max(n.peak, len(n.kids))
	return k
}

// sweep forgets the children of n that this pass did not list. A map
// keeps its buckets after deletes, so one that has shrunk to a quarter of
// its peak is rebuilt: churn of short-lived cgroups cannot grow it
// without bound. The files a forgotten node held open are closed.
func (w *walker) sweep(n *node) {
	for name, k := range n.kids {
		if k.seen != w.pass {
			w.closeNode(k)
			delete(n.kids, name)
		}
	}
	if n.peak > 64 && len(n.kids)*4 < n.peak {
		kids := make(map[string]*node, len(n.kids))
		for name, k := range n.kids {
			kids[name] = k
		}
		n.kids, n.peak = kids, len(kids)
	}
}

// byName orders nodes by directory name, so a listing comes out in the
// same order on every filesystem and every pass.
func byName(a, b *node) int { return strings.Compare(a.name, b.name) }
