package taskiter

import (
	"fmt"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// Opener opens handles on the tasks of the Source's last read. A handle
// reads its task's counters from the records of the latest read, so a
// table pass reads the kernel once, in Lister.List, and never per task.
type Opener struct{ s *Source }

var _ container.TaskOpener = Opener{}

// Opener returns an Opener over s's records.
func (s *Source) Opener() Opener { return Opener{s} }

// Open implements container.TaskOpener. A tid the last read did not see is
// an error wrapping unix.ESRCH.
func (o Opener) Open(tid int32) (container.TaskHandle, error) {
	r, ok := o.s.lookup(tid)
	if !ok {
		return nil, fmt.Errorf("taskiter: task %d: %w", tid, unix.ESRCH)
	}
	return &handle{s: o.s, tid: tid, start: r.start}, nil
}

// handle is one task, known by its id and start time. The kernel never
// gives two tasks alive at once the same id, and a task that takes an id
// again starts later: a record with the id and another start time is
// another task.
type handle struct {
	s     *Source
	tid   int32
	start uint64 // ns since boot
}

// errGone is returned by Read once the handle's task is gone. It is one
// value, so a read of a gone task allocates nothing.
var errGone = fmt.Errorf("taskiter: task gone: %w", unix.ESRCH)

// StartTime implements container.TaskHandle: clock ticks since boot, as
// /proc/<tid>/stat field 22.
func (h *handle) StartTime() uint64 { return schedstat.StartTicks(h.start) }

// Read implements container.TaskHandle. It returns the counters of the
// source's last read, or an error wrapping unix.ESRCH when that read did
// not see the task: it was reaped, and its id may be another task's now.
// It allocates nothing.
func (h *handle) Read() (schedstat.Stat, error) {
	r, ok := h.s.lookup(h.tid)
	if !ok || r.start != h.start {
		return schedstat.Stat{}, errGone
	}
	return r.stat, nil
}

// Close implements container.TaskHandle; there is nothing to release.
func (h *handle) Close() error { return nil }
