package cgroupfs

import (
	"errors"
	"slices"

	"github.com/schedstatd/schedstatd/internal/sysx"
	"golang.org/x/sys/unix"
)

// FDKeeper decides how many counter files the walk may hold open between
// passes, out of a budget it shares with whatever else keeps fds (the
// procfs task source). The walker calls it from the goroutine that lists.
type FDKeeper interface {
	// KeepCgroupFD reports whether one more fd may be kept, and counts it
	// when it may.
	KeepCgroupFD() bool
	// ReleaseCgroupFD gives back one fd that KeepCgroupFD counted.
	ReleaseCgroupFD()
}

// keptFD is a cgroup counter file held open between passes, read with one
// pread at offset 0 each pass: no path lookup, open or close. fd is -1 when
// the file is not held.
type keptFD struct{ fd int }

// noFD is a keptFD that holds nothing.
var noFD = keptFD{fd: -1}

// readCounter reads the counter file kind of the cgroup n (its name
// relative to dirfd, built only when the file is opened) into w.buf. With
// a keeper, the file is opened once, kept in k while the budget allows,
// and read with pread after that.
// A kept fd whose read fails with ENODEV belongs to a cgroup that was
// removed (or a file hidden since, as cgroup.pressure 0 does): it is
// closed, and the file is opened again by name, which finds the cgroup
// made since under the same path or fails as a removed cgroup's file
// does. Other errors keep the fd, for the next pass to try again.
func (w *walker) readCounter(dirfd int, n *node, kind fileKind, k *keptFD) error {
	if k.fd >= 0 {
		err := w.pread(k.fd)
		if err == nil || !errors.Is(err, unix.ENODEV) {
			return err
		}
		w.release(k)
	}
	name := w.fileName(n, kind)
	if w.keeper == nil {
		return w.read(dirfd, name, n.rel)
	}
	fd, err := openat(dirfd, name, unix.O_RDONLY)
	if err != nil {
		w.buf = w.buf[:0]
		return err
	}
	w.fire(hookFileOpened, n.rel)
	if !w.keeper.KeepCgroupFD() {
		w.buf, err = readAll(fd, w.buf[:0])
		unix.Close(fd)
		return err
	}
	if err = w.pread(fd); err != nil {
		unix.Close(fd)
		w.keeper.ReleaseCgroupFD()
		return err
	}
	k.fd = fd
	w.kept++
	return nil
}

// pread reads the whole of the kept file fd into w.buf with one pread at
// offset 0, which makes the kernel show the file afresh. Every cgroup
// control file is one seq_file record (kernfs ends the sequence after the
// first), generated whole before it is copied out, so a read that does not
// fill the buffer returned all of it; one that fills it is done again
// into a buffer twice the size.
func (w *walker) pread(fd int) error {
	if cap(w.buf) < minRead {
		w.buf = make([]byte, 0, minRead)
	}
	for {
		n, err := sysx.Pread(fd, w.buf[:cap(w.buf)])
		if err != nil {
			w.buf = w.buf[:0]
			return err
		}
		if n < cap(w.buf) {
			w.buf = w.buf[:n]
			return nil
		}
		w.buf = slices.Grow(w.buf[:0], 2*cap(w.buf))
	}
}

// release closes the fd k holds, if any, and gives it back to the keeper.
func (w *walker) release(k *keptFD) {
	if k.fd < 0 {
		return
	}
	unix.Close(k.fd)
	k.fd = -1
	w.kept--
	if w.keeper != nil {
		w.keeper.ReleaseCgroupFD()
	}
}

// closeNode releases the files n and its cached descendants hold open; it
// is called for nodes the walk forgets.
func (w *walker) closeNode(n *node) {
	w.release(&n.usageFD)
	w.release(&n.bandwidthFD)
	w.release(&n.pressureFD)
	for _, k := range n.kids {
		w.closeNode(k)
	}
}

// KeepFiles makes the walk hold each cgroup's counter files (CPU counter,
// bandwidth, pressure) open between passes and read them with one pread
// each, for as many fds as k allows; the rest are opened, read and closed
// on every pass as without it. It must be called before the first List,
// from the goroutine that lists; Close gives the fds back.
func (h *Hierarchy) KeepFiles(k FDKeeper) { h.w.keeper = k }

// KeptFiles returns the number of counter files held open now. It must be
// called from the goroutine that lists.
func (h *Hierarchy) KeptFiles() int { return h.w.kept }

// Close closes every counter file the walk holds open and forgets the
// cgroups it cached; a List after Close starts afresh. It must be called
// from the goroutine that lists, or once that goroutine is done.
func (h *Hierarchy) Close() error {
	if h.w.root != nil {
		h.w.closeNode(h.w.root)
		h.w.root = nil
	}
	return nil
}
