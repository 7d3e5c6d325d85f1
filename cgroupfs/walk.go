package cgroupfs

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// direntBufSize is the size of the buffer getdents64 fills.
const direntBufSize = 8192

// walker lists one hierarchy. It keeps every buffer and the node cache
// between passes, so it belongs to one goroutine.
type walker struct {
	dir       string     // hierarchy root, absolute
	v2        bool       // threads in cgroup.threads, counter in cpu.stat
	usageFile string     // counter file in each cgroup, "" if none or mirrored
	mirror    string     // v1 cpuacct mount holding the counters, or ""
	bandwidth kernelFile // where v1 cgroups keep cpu.stat; none on v2
	pressure  kernelFile // where cgroups keep cpu.pressure
	// kernfs is set when dir is a cgroup filesystem, where a directory's
	// link count is 2 plus its subdirectories: a cgroup with a count of 2
	// has no children and is not opened to be listed.
	kernfs bool
	// noThreads leaves thread lists unread, for sources that learn each
	// thread's cgroup another way.
	noThreads bool
	// keeper, when set, lets the walk hold counter files open between
	// passes; kept is how many it holds.
	keeper   FDKeeper
	kept     int
	root     *node
	pass     uint64
	buf      []byte  // file contents
	dents    []byte  // getdents64 records
	names    []byte  // the name of the file being opened (fileName)
	stack    []*node // children still to visit, for all open levels
	stx      unix.Statx_t
	testHook func(at hookPoint, rel string)
}

// hookPoint names a moment of the walk at which tests change the tree.
type hookPoint int

const (
	hookBeforeRead hookPoint = iota // a cgroup is about to be read
	hookFileOpened                  // a file of the cgroup is open, not read
	hookKidsListed                  // its children are listed, none opened
)

// list fills l with one pass over the hierarchy, with each cgroup's
// threads unless noThreads.
func (w *walker) list(l *Listing, noThreads bool) error {
	l.Reset()
	w.noThreads = noThreads
	w.pass++
	if w.root == nil {
		w.root = w.newRoot()
	}
	w.root.seen = w.pass
	if err := w.visit(l, atCWD, w.root, -1); err != nil {
		w.stack = w.stack[:0]
		l.Reset()
		return err
	}
	return nil
}

// visit adds the cgroup n to l, then its descendants. n's names are
// relative to the directory fd parentfd; parent is the index of its
// parent's entry, -1 for the root. Only an error at the root is returned;
// below it a removed cgroup is left out and other errors are recorded in
// the cgroup's entry.
func (w *walker) visit(l *Listing, parentfd int, n *node, parent int) error {
	ino, nlink, err := statxAt(parentfd, n.dir, &w.stx)
	switch {
	case err == nil:
	case parent < 0:
		return w.pathError(n, "", err)
	case IsRemoved(err):
		return nil
	default:
		// Not proof of removal: the cgroup and what lies below it are
		// unknown this pass, not gone.
		c := l.Add(n.rel, parent)
		c.Err, c.SubtreeUnread = w.pathError(n, "", err), true
		l.Errors++
		return nil
	}
	idx := len(l.Cgroups)
	l.Add(n.rel, parent).ID = ino
	w.fire(hookBeforeRead, n.rel)
	err = w.readOwn(parentfd, n, &l.Cgroups[idx])
	start := len(w.stack)
	fd := -1
	var derr error
	if !w.kernfs || nlink != 2 {
		if fd, derr = openDir(parentfd, n.dir); derr == nil {
			defer unix.Close(fd)
			derr = w.listKids(fd, n)
		}
		if derr != nil {
			err = cmp.Or(err, w.pathError(n, "", derr))
		}
	} else if len(n.kids) > 0 {
		w.sweep(n) // childless now: forget the children it had
	}
	if err != nil {
		if parent < 0 {
			return err
		}
		if w.removed(err, parentfd, n, ino) {
			l.Cgroups = l.Cgroups[:idx]
			w.stack = w.stack[:start]
			return nil
		}
		l.Cgroups[idx].Err = err
		l.Cgroups[idx].SubtreeUnread = derr != nil
		l.Errors++
	}
	end := len(w.stack)
	w.fire(hookKidsListed, n.rel)
	for i := start; i < end; i++ {
		_ = w.visit(l, fd, w.stack[i], idx)
	}
	w.stack = w.stack[:start]
	return nil
}

// readOwn reads the cgroup's own threads (unless w.noThreads) and counter
// into c, opening them relative to parentfd. A failure leaves that part
// empty: no threads after a bad threads file, HasUsage false after a bad
// counter. It returns the first error.
func (w *walker) readOwn(parentfd int, n *node, c *Cgroup) error {
	if w.noThreads {
		return cmp.Or(w.readUsage(parentfd, n, c), w.readKernelFiles(parentfd, n, c))
	}
	err := w.read(parentfd, w.fileName(n, threadsKind), n.rel)
	if err == nil {
		c.TIDs, err = ParseTIDs(w.buf, c.TIDs[:0])
	}
	if err != nil {
		err = w.pathError(n, threadsFile(w.v2), err)
	}
	return cmp.Or(err, w.readUsage(parentfd, n, c), w.readKernelFiles(parentfd, n, c))
}

// listKids pushes the child cgroups of n, whose directory is open as
// dirfd, in name order on w.stack.
func (w *walker) listKids(dirfd int, n *node) error {
	start := len(w.stack)
	if w.dents == nil {
		w.dents = make([]byte, direntBufSize)
	}
	for {
		nb, err := unix.Getdents(dirfd, w.dents)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if nb <= 0 {
			break
		}
		for b := w.dents[:nb]; ; {
			name, typ, rest, ok := nextDirent(b)
			if !ok {
				break
			}
			b = rest
			if isDotOrDotDot(name) || (typ != dtDir && (typ != dtUnknown || !isDirAt(dirfd, name))) {
				continue
			}
			w.stack = append(w.stack, w.kid(n, name))
		}
	}
	kids := w.stack[start:]
	slices.SortFunc(kids, byName)
	if len(kids) < len(n.kids) {
		w.sweep(n)
	}
	return nil
}

// read reads the file name (NUL-terminated, relative to dirfd) of the
// cgroup rel into w.buf.
func (w *walker) read(dirfd int, name []byte, rel string) error {
	fd, err := openat(dirfd, name, unix.O_RDONLY)
	if err != nil {
		w.buf = w.buf[:0]
		return err
	}
	w.fire(hookFileOpened, rel)
	w.buf, err = readAll(fd, w.buf[:0])
	unix.Close(fd)
	return err
}

// fire calls the test hook, if any.
func (w *walker) fire(at hookPoint, rel string) {
	if w.testHook != nil {
		w.testHook(at, rel)
	}
}

// pathError names the file (or, for "", the directory) of n in err.
func (w *walker) pathError(n *node, file string, err error) error {
	return fmt.Errorf("cgroupfs: %s: %w", filepath.Join(w.dir, n.rel, file), err)
}

// removed reports whether err, from reading the cgroup n whose directory
// had inode ino when the pass reached it, means that n was removed:
// ENODEV always does; ENOENT only if n's directory is gone too, or is a
// new cgroup of the same name. A missing file in a cgroup that still
// exists is an error.
func (w *walker) removed(err error, parentfd int, n *node, ino uint64) bool {
	if errors.Is(err, unix.ENODEV) {
		return true
	}
	if !errors.Is(err, unix.ENOENT) {
		return false
	}
	now, _, serr := statxAt(parentfd, n.dir, &w.stx)
	return IsRemoved(serr) || (serr == nil && now != ino)
}

// isDirAt reports whether name below dirfd is a directory, for filesystems
// that do not fill d_type.
func isDirAt(dirfd int, name []byte) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}
