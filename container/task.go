package container

import "github.com/schedstatd/schedstatd/schedstat"

// TaskHandle reads one task's counters from the moment the task was first
// seen. Read must fail with an error for which schedstat.IsGone is true once
// the task it was opened for has exited, and must never read another task
// that took the same id.
type TaskHandle interface {
	// StartTime returns the task's start time in clock ticks since boot.
	StartTime() uint64
	// Read returns the task's counters.
	Read() (schedstat.Stat, error)
	// Close releases the handle.
	Close() error
}

// TaskOpener opens handles on tasks by thread id.
type TaskOpener interface {
	// Open opens a handle on the task that holds tid now.
	Open(tid int32) (TaskHandle, error)
}
