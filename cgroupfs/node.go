package cgroupfs

import "strings"

// node is a cgroup directory the walker has seen, kept between passes so
// that a steady-state pass builds no strings: the path a Listing reports
// and the directory's name are made once, when the cgroup first appears.
// Nodes of removed cgroups are dropped by the pass that no longer finds
// them, so the cache holds what the last pass saw and no more.
//
// A cgroup's own files are opened relative to its parent's directory fd
// ("name/tasks"), so a cgroup without children is never opened as a
// directory. The root's names are absolute. The files' names are built
// into one buffer when a file is opened (fileName), not kept: the counter
// files stay open between passes, so their names are built about once in a
// cgroup's life; the thread list, opened every pass, has its name built
// each time, a copy of some tens of bytes beside the open.
type node struct {
	name string // directory name; "" for the root
	rel  string // path relative to the hierarchy root, "/" for the root
	dir  []byte // name, or the root's absolute path, and a NUL
	// usageFD, bandwidthFD and pressureFD hold those files open between
	// passes when the walker keeps files (kept.go).
	usageFD, bandwidthFD, pressureFD keptFD
	kids                             map[string]*node
	peak                             int    // most kids held since kids was last rebuilt
	seen                             uint64 // the last pass that listed this node
}

// newRoot returns the node of the hierarchy root.
func (w *walker) newRoot() *node {
	return &node{rel: "/", dir: cstring(w.dir), usageFD: noFD, bandwidthFD: noFD, pressureFD: noFD}
}

// fileKind names one of the files the walker reads in every cgroup.
type fileKind int

const (
	threadsKind   fileKind = iota // tasks or cgroup.threads
	usageKind                     // the CPU counter
	bandwidthKind                 // cpu.stat on v1
	pressureKind                  // cpu.pressure
)

// fileName returns the NUL-terminated name the walker opens for the file
// kind of n: below n's parent's directory ("name/tasks"), absolute for the
// root and for a file in a mirror hierarchy; nil when the hierarchy's
// cgroups have no such file. The name is built in w.names and holds until
// the next call.
func (w *walker) fileName(n *node, kind fileKind) []byte {
	base := n.dir[:len(n.dir)-1]
	inDir := func(file string) []byte {
		return append(append(append(w.names[:0], base...), '/'), file...)
	}
	mirrored := func(mirror, file string) []byte {
		b := append(w.names[:0], mirror...)
		if n.rel != "/" {
			b = append(b, n.rel...)
		}
		return append(append(b, '/'), file...)
	}
	var b []byte
	switch kind {
	case threadsKind:
		b = inDir(threadsFile(w.v2))
	case usageKind:
		switch {
		case w.mirror != "":
			b = mirrored(w.mirror, usageFileV1)
		case w.usageFile != "":
			b = inDir(w.usageFile)
		default:
			return nil
		}
	case bandwidthKind, pressureKind:
		f := w.bandwidth
		if kind == pressureKind {
			f = w.pressure
		}
		switch {
		case f.file == "":
			return nil
		case f.mirror == "":
			b = inDir(f.file)
		default:
			b = mirrored(f.mirror, f.file)
		}
	}
	w.names = append(b, 0)
	return w.names
}

// kid returns the child of n called name, making and caching it when the
// cgroup is new, and marks it seen in this pass. Looking up an existing
// child allocates nothing.
func (w *walker) kid(n *node, name []byte) *node {
	if k, ok := n.kids[string(name)]; ok {
		k.seen = w.pass
		return k
	}
	k := &node{seen: w.pass, usageFD: noFD, bandwidthFD: noFD, pressureFD: noFD}
	if n.rel == "/" {
		k.rel = "/" + string(name)
	} else {
		k.rel = n.rel + "/" + string(name)
	}
	// The name is the end of the path, not a string of its own.
	k.name = k.rel[len(k.rel)-len(name):]
	k.dir = cstring(k.name)
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
