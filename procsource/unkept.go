package procsource

import (
	"fmt"

	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// Unkept reads a task without keeping an fd open between reads, for when
// the open-file limit leaves no room for one more kept fd. Each Read opens
// the task's directory, checks that the start time is still the one seen
// first, reads schedstat through the same directory fd and closes both: four
// syscalls more than Task.Read, and an fd only for the length of the read.
//
// Identity is checked by start time, which has a resolution of one clock
// tick: an id reused within the same tick would go unnoticed, where a kept
// fd never errs. It is not safe for concurrent use.
type Unkept struct {
	path  taskPath
	tid   int32
	start uint64
}

// OpenUnkept returns a reader of the task tid under procRoot and reads its
// start time. It holds no fd when it returns.
func OpenUnkept(procRoot string, tid int32) (*Unkept, error) {
	p := newTaskPath(procRoot, tid)
	buf := scratch.Get().(*[statSize]byte)
	defer scratch.Put(buf)
	dirfd, start, err := openTask(p, buf[:])
	if err != nil {
		return nil, err
	}
	unix.Close(dirfd)
	return &Unkept{path: p, tid: tid, start: start}, nil
}

// TID returns the task's id.
func (u *Unkept) TID() int32 { return u.tid }

// StartTime returns the task's start time in clock ticks since boot.
func (u *Unkept) StartTime() uint64 { return u.start }

// Read reads the task's counters. If the id now belongs to a task with
// another start time, the task Unkept was opened for is gone: the error
// wraps ESRCH and schedstat.IsGone is true.
func (u *Unkept) Read() (schedstat.Stat, error) {
	buf := scratch.Get().(*[statSize]byte)
	defer scratch.Put(buf)
	dirfd, start, err := openTask(u.path, buf[:])
	if err != nil {
		return schedstat.Stat{}, err
	}
	if start != u.start {
		unix.Close(dirfd)
		return schedstat.Stat{}, fmt.Errorf("%s: started at tick %d, not %d: %w", u.path, start, u.start, unix.ESRCH)
	}
	fd, err := openat(dirfd, schedstatName, unix.O_RDONLY)
	unix.Close(dirfd)
	if err != nil {
		return schedstat.Stat{}, err
	}
	n, err := pread(fd, buf[:schedstatSize])
	unix.Close(fd)
	if err != nil {
		return schedstat.Stat{}, err
	}
	return parseSchedstat(buf[:n])
}

// Close does nothing: an Unkept holds no fd between reads.
func (u *Unkept) Close() error { return nil }
