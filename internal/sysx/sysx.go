// Package sysx holds the few system calls the per-task and per-cgroup hot
// paths make, in forms that allocate nothing: unix.Openat converts its path
// string on every call, so paths here are NUL-terminated byte slices made
// once by CString and kept.
package sysx

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// CString returns s NUL-terminated, for Openat. Callers convert once and
// keep the result.
func CString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// Openat opens name, a NUL-terminated path, relative to the directory fd
// dirfd (or unix.AT_FDCWD), with O_CLOEXEC added to flags, retrying on
// EINTR. It allocates nothing.
func Openat(dirfd int, name []byte, flags int) (int, error) {
	if len(name) == 0 || name[len(name)-1] != 0 {
		return -1, unix.EINVAL
	}
	for {
		fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd),
			uintptr(unsafe.Pointer(&name[0])), uintptr(flags|unix.O_CLOEXEC), 0, 0, 0)
		switch errno {
		case 0:
			return int(fd), nil
		case unix.EINTR:
			continue
		default:
			return -1, errno
		}
	}
}

// Pread reads from fd at offset 0 into buf, retrying on EINTR.
func Pread(fd int, buf []byte) (int, error) {
	for {
		n, err := unix.Pread(fd, buf, 0)
		if err != unix.EINTR {
			return n, err
		}
	}
}
