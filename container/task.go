package container

import (
	"errors"
	"fmt"

	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// TaskHandle reads one task's counters from the moment the task was first
// seen. Read must fail with an error for which schedstat.IsGone is true once
// the task it was opened for has exited, and must never read another task
// that took the same id.
type TaskHandle interface {
	// StartTime returns the task's start time in clock ticks since boot.
	StartTime() uint64
	// Read returns the task's counters, using buf (at least
	// schedstat.BufferSize bytes) as scratch space.
	Read(buf []byte) (schedstat.Stat, error)
	// Close releases the handle.
	Close() error
}

// TaskOpener opens handles on tasks by thread id.
type TaskOpener interface {
	// Open opens a handle on the task that holds tid now.
	Open(tid int32) (TaskHandle, error)
}

// ProcOpener opens tasks through a procfs mount. Each task keeps one fd
// (schedstat.Task) while Budget allows; beyond it, or when opening fails
// for want of an fd, tasks are read by open, read and close on every pass
// (schedstat.Unkept), so counting goes on, slower, at any fd limit.
type ProcOpener struct {
	// Root is the procfs mount point, such as "/proc".
	Root string
	// Budget, if not nil, bounds the fds kept open.
	Budget *FDBudget
	// Hidden says the procfs hides other users' tasks (mounted with
	// hidepid): a listed task that cannot be found is then reported as a
	// permission error rather than as a task that exited.
	Hidden bool
}

// FDBudget bounds the number of task fds a ProcOpener keeps open and counts
// the tasks read without one. It is used by the goroutine that owns the
// table.
type FDBudget struct {
	// Max is the number of task fds that may be kept open.
	Max    int
	kept   int
	unkept int
}

// Kept returns the number of task fds open now.
func (b *FDBudget) Kept() int { return b.kept }

// Unkept returns the number of tracked tasks read without a kept fd.
func (b *FDBudget) Unkept() int { return b.unkept }

// Open implements TaskOpener.
func (o ProcOpener) Open(tid int32) (TaskHandle, error) {
	h, err := o.open(tid)
	if err != nil && o.Hidden && errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("task %d is hidden by procfs hidepid (%v): %w", tid, err, unix.EACCES)
	}
	return h, err
}

func (o ProcOpener) open(tid int32) (TaskHandle, error) {
	b := o.Budget
	if b == nil {
		t, err := schedstat.Open(o.Root, tid)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
	if b.kept < b.Max {
		t, err := schedstat.Open(o.Root, tid)
		if err == nil {
			b.kept++
			return &budgeted{TaskHandle: t, count: &b.kept}, nil
		}
		if !errors.Is(err, unix.EMFILE) && !errors.Is(err, unix.ENFILE) {
			return nil, err
		}
	}
	u, err := schedstat.OpenUnkept(o.Root, tid)
	if err != nil {
		return nil, err
	}
	b.unkept++
	return &budgeted{TaskHandle: u, count: &b.unkept}, nil
}

// budgeted gives its place in an FDBudget back on Close.
type budgeted struct {
	TaskHandle
	count  *int
	closed bool
}

func (h *budgeted) Close() error {
	if h.closed {
		return nil
	}
	h.closed = true
	*h.count--
	return h.TaskHandle.Close()
}
