package procsource

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/schedstatd/schedstatd/internal/sysx"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// statSize is the scratch space for /proc/<tid>/stat up to field 22 (a
// 7-digit id, a command name of at most 64 bytes, and 20 numeric fields of
// at most 20 digits), which opening a task and every Unkept read need;
// schedstatSize is one byte more than the longest /proc/<tid>/schedstat
// (three 20-digit numbers, two spaces and a newline), so that a read that
// fills it is known to be too long rather than cut inside a number.
const (
	statSize      = 1024
	schedstatSize = 64
)

// scratch holds the stat buffers of opens and unkept reads: a buffer on
// the stack would escape to the heap through the read system call, once
// per read.
var scratch = sync.Pool{New: func() any { return new([statSize]byte) }}

// Task is one task's schedstat file, kept open from the moment the task was
// first seen. It is not safe for concurrent use. It is a container.TaskHandle.
type Task struct {
	fd    int
	tid   int32
	start uint64
	// buf is the task's own read buffer: Read allocates nothing and
	// shares nothing with other tasks' reads.
	buf [schedstatSize]byte
}

// Open opens /proc/<tid>/schedstat under procRoot and reads the task's start
// time. Both are read through one directory fd, so they belong to the same
// task even if tid is being reused. Errors wrap the errno; IsGone reports a
// task that no longer exists.
func Open(procRoot string, tid int32) (*Task, error) {
	p := newTaskPath(procRoot, tid)
	buf := scratch.Get().(*[statSize]byte)
	defer scratch.Put(buf)
	dirfd, start, err := openTask(p, buf[:])
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	fd, err := openat(dirfd, schedstatName, unix.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("open %s/schedstat: %w", p, err)
	}
	return &Task{fd: fd, tid: tid, start: start}, nil
}

// taskPath names a task's files for openat, NUL-terminated.
type taskPath struct {
	// dir is <procRoot>/<tid>.
	dir []byte
	// stat is task/<tid>/stat below dir: the thread's own stat. dir's own
	// stat describes the whole thread group, and the kernel sums the CPU
	// time of every thread to write it, so reading it costs as much as the
	// group is large (636 us per open in a 10,000-thread process, against
	// 14 us for this file).
	stat []byte
}

func newTaskPath(procRoot string, tid int32) taskPath {
	id := strconv.FormatInt(int64(tid), 10)
	return taskPath{dir: sysx.CString(procRoot + "/" + id), stat: sysx.CString("task/" + id + "/stat")}
}

// String returns the directory, for errors.
func (p taskPath) String() string { return string(p.dir[:len(p.dir)-1]) }

// openTask opens the task directory as an O_PATH fd, which pins the task:
// files opened through it belong to that task or fail. It returns the fd
// and the task's start time. buf is scratch space of statSize bytes.
func openTask(p taskPath, buf []byte) (dirfd int, start uint64, err error) {
	dirfd, err = openat(unix.AT_FDCWD, p.dir, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return -1, 0, fmt.Errorf("open %s: %w", p, err)
	}
	statfd, err := openat(dirfd, p.stat, unix.O_RDONLY)
	if err != nil {
		unix.Close(dirfd)
		return -1, 0, fmt.Errorf("open %s/%s: %w", p, p.stat[:len(p.stat)-1], err)
	}
	n, err := pread(statfd, buf)
	unix.Close(statfd)
	if err == nil {
		start, err = schedstat.ParseStartTime(buf[:n])
	}
	if err != nil {
		unix.Close(dirfd)
		return -1, 0, fmt.Errorf("%s/%s: %w", p, p.stat[:len(p.stat)-1], err)
	}
	return dirfd, start, nil
}

// TID returns the task's id.
func (t *Task) TID() int32 { return t.tid }

// StartTime returns the task's start time in clock ticks since boot.
func (t *Task) StartTime() uint64 { return t.start }

// Read re-reads the task's counters with one pread at offset 0. It does not
// allocate. An error for which schedstat.IsGone is true means the task has
// been reaped; the fd never reads another task that took the same id.
func (t *Task) Read() (schedstat.Stat, error) {
	n, err := pread(t.fd, t.buf[:])
	if err != nil {
		return schedstat.Stat{}, err
	}
	return parseSchedstat(t.buf[:n])
}

// parseSchedstat parses a read of schedstatSize bytes at most: one that
// filled them is longer than any schedstat file the kernel writes.
func parseSchedstat(b []byte) (schedstat.Stat, error) {
	if len(b) == schedstatSize {
		return schedstat.Stat{}, fmt.Errorf("schedstat: %w: %d bytes or more, longer than three counters", schedstat.ErrParse, len(b))
	}
	return schedstat.Parse(b)
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

// schedstatName is opened below a task's directory: the thread's own
// counters, whatever the id.
var schedstatName = sysx.CString("schedstat")

func openat(dirfd int, name []byte, flags int) (int, error) { return sysx.Openat(dirfd, name, flags) }

func pread(fd int, buf []byte) (int, error) { return sysx.Pread(fd, buf) }
