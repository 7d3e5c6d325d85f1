package schedstat

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"golang.org/x/sys/unix"
)

// BufferSize is enough for any /proc/<tid>/schedstat: three 20-digit
// numbers, two spaces and a newline.
const BufferSize = 64

// statBufferSize is enough for /proc/<tid>/stat: 52 numeric fields and a
// 16-byte command name.
const statBufferSize = 1024

// Task is one task's schedstat file, kept open from the moment the task was
// first seen. It is not safe for concurrent use.
type Task struct {
	fd    int
	tid   int32
	start uint64
}

// Open opens /proc/<tid>/schedstat under procRoot and reads the task's start
// time. Both are read through one directory fd, so they belong to the same
// task even if tid is being reused. Errors wrap the errno; IsGone reports a
// task that no longer exists.
func Open(procRoot string, tid int32) (*Task, error) {
	dir := procRoot + "/" + strconv.FormatInt(int64(tid), 10)
	dirfd, err := openat(unix.AT_FDCWD, dir, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(dirfd)

	var buf [statBufferSize]byte
	statfd, err := openat(dirfd, "stat", unix.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("open %s/stat: %w", dir, err)
	}
	n, err := pread(statfd, buf[:])
	unix.Close(statfd)
	if err != nil {
		return nil, fmt.Errorf("read %s/stat: %w", dir, err)
	}
	start, err := ParseStartTime(buf[:n])
	if err != nil {
		return nil, fmt.Errorf("%s/stat: %w", dir, err)
	}

	fd, err := openat(dirfd, "schedstat", unix.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("open %s/schedstat: %w", dir, err)
	}
	return &Task{fd: fd, tid: tid, start: start}, nil
}

// TID returns the task's id.
func (t *Task) TID() int32 { return t.tid }

// StartTime returns the task's start time in clock ticks since boot.
func (t *Task) StartTime() uint64 { return t.start }

// Read re-reads the task's counters with one pread at offset 0 into buf,
// which must hold at least BufferSize bytes; a shorter one is an error
// wrapping io.ErrShortBuffer. It does not allocate. An error for which
// IsGone is true means the task has been reaped; the fd never reads another
// task that took the same id.
func (t *Task) Read(buf []byte) (Stat, error) {
	if len(buf) < BufferSize {
		// A short read can end inside the last number and still parse.
		return Stat{}, fmt.Errorf("schedstat: read buffer of %d bytes, want at least %d: %w", len(buf), BufferSize, io.ErrShortBuffer)
	}
	n, err := pread(t.fd, buf)
	if err != nil {
		return Stat{}, err
	}
	return Parse(buf[:n])
}

// Close closes the kept fd. Calling it twice is harmless.
func (t *Task) Close() error {
	if t.fd < 0 {
		return nil
	}
	err := unix.Close(t.fd)
	t.fd = -1
	return err
}

// IsGone reports whether err means the task no longer exists: ESRCH from a
// kept fd whose task was reaped, or ENOENT from opening a task that exited.
func IsGone(err error) bool {
	return errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT)
}

func openat(dirfd int, path string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, path, flags|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func pread(fd int, buf []byte) (int, error) {
	for {
		n, err := unix.Pread(fd, buf, 0)
		if err != unix.EINTR {
			return n, err
		}
	}
}
