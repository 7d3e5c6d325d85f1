package cgroupfs

import (
	"slices"
	"unsafe"

	"github.com/schedstatd/schedstatd/internal/sysx"
	"golang.org/x/sys/unix"
)

// minRead is the room readAll makes before a read when the buffer is full.
// Most tasks and cgroup.threads files fit; larger ones grow the buffer,
// which the walker keeps for the next pass.
const minRead = 4096

// atCWD is AT_FDCWD, for openat with an absolute path.
const atCWD = unix.AT_FDCWD

// cstring returns s NUL-terminated for openat; see sysx.CString.
func cstring(s string) []byte { return sysx.CString(s) }

// openat opens name, a NUL-terminated path, below dirfd (or atCWD) with
// O_CLOEXEC, allocating nothing; see sysx.Openat.
func openat(dirfd int, name []byte, flags int) (int, error) { return sysx.Openat(dirfd, name, flags) }

// openDir opens the directory name below dirfd for reading its entries.
func openDir(dirfd int, name []byte) (int, error) {
	return openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY)
}

// statxAt returns the inode number and link count of name (NUL-terminated)
// below dirfd, without following a symlink, using stx as the kernel's
// buffer. It allocates nothing.
func statxAt(dirfd int, name []byte, stx *unix.Statx_t) (ino uint64, nlink uint32, err error) {
	if len(name) == 0 || name[len(name)-1] != 0 {
		return 0, 0, unix.EINVAL
	}
	_, _, errno := unix.Syscall6(unix.SYS_STATX, uintptr(dirfd), uintptr(unsafe.Pointer(&name[0])),
		unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_INO|unix.STATX_NLINK,
		uintptr(unsafe.Pointer(stx)), 0)
	if errno != 0 {
		return 0, 0, errno
	}
	return stx.Ino, stx.Nlink, nil
}

// readAll reads fd to its end, appending to buf, and returns the extended
// buffer, grown as needed. On error it returns what was read so far.
func readAll(fd int, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, max(cap(buf), minRead))
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return buf, err
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}
