package procsource

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"golang.org/x/sys/unix"
)

// Opener opens tasks through a procfs mount. Each task keeps one fd
// (Task) while Budget allows; beyond it, or when opening fails
// for want of an fd, tasks are read by open, read and close on every pass
// (Unkept).
type Opener struct {
	// Root is the procfs mount point, such as "/proc".
	Root string
	// Budget, if not nil, bounds the fds kept open.
	Budget *FDBudget
	// Hidden says the procfs hides other users' tasks (mounted with
	// hidepid): a listed task that cannot be found is then reported as a
	// permission error rather than as a task that exited.
	Hidden bool
}

var _ container.TaskOpener = Opener{}

// FDBudget bounds the number of fds kept open, by an Opener for its tasks
// and by the cgroup walk for its counter files (it is a
// cgroupfs.FDKeeper, for up to Max/CgroupShare), and counts the tasks
// read without one. Whoever asks first while there is room keeps an fd. It is used by the goroutine that
// owns the table, except Kept, CgroupKept and Unkept, which any goroutine
// may call.
type FDBudget struct {
	// Max is the number of task and cgroup fds that may be kept open.
	Max int
	// CgroupShare, above 1, bounds the cgroup counter files to
	// Max/CgroupShare; 0 or 1 lets them take the whole budget, as when
	// no task keeps an fd (the task iterator is the source).
	CgroupShare int
	// Logger, if not nil, is told once when the first task goes without
	// a kept fd.
	Logger *slog.Logger

	kept, unkept, cgroups atomic.Int64
	warned                bool
}

var _ cgroupfs.FDKeeper = (*FDBudget)(nil)

// Kept returns the number of task fds open now.
func (b *FDBudget) Kept() int { return int(b.kept.Load()) }

// CgroupKept returns the number of cgroup counter files kept open now.
func (b *FDBudget) CgroupKept() int { return int(b.cgroups.Load()) }

// room reports whether one more fd fits in the budget.
func (b *FDBudget) room() bool { return b.Kept()+b.CgroupKept() < b.Max }

// DefaultCgroupShare is the CgroupShare New sets: cgroup counter files
// may hold a quarter of the budget. A task's kept fd saves as much per
// pass as a cgroup file's (an open and a close), and it also tells an
// exited task from a new one that took its id, so tasks may use the whole
// budget and cgroup files a share of it.
const DefaultCgroupShare = 4

// KeepCgroupFD implements cgroupfs.FDKeeper: a cgroup counter file may be
// kept while the budget has room and the cgroup files hold less than
// Max/CgroupShare of it.
func (b *FDBudget) KeepCgroupFD() bool {
	if !b.room() || b.CgroupShare > 1 && b.CgroupKept() >= b.Max/b.CgroupShare {
		return false
	}
	b.cgroups.Add(1)
	return true
}

// ReleaseCgroupFD implements cgroupfs.FDKeeper.
func (b *FDBudget) ReleaseCgroupFD() { b.cgroups.Add(-1) }

// Unkept returns the number of tracked tasks read without a kept fd.
func (b *FDBudget) Unkept() int { return int(b.unkept.Load()) }

// Open implements container.TaskOpener.
func (o Opener) Open(tid int32) (container.TaskHandle, error) {
	h, err := o.open(tid)
	if err != nil && o.Hidden && errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("task %d is hidden by procfs hidepid (%v): %w", tid, err, unix.EACCES)
	}
	return h, err
}

func (o Opener) open(tid int32) (container.TaskHandle, error) {
	b := o.Budget
	if b == nil {
		t, err := Open(o.Root, tid)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
	if b.room() {
		t, err := Open(o.Root, tid)
		if err == nil {
			b.kept.Add(1)
			return &budgeted{TaskHandle: t, count: &b.kept}, nil
		}
		if !errors.Is(err, unix.EMFILE) && !errors.Is(err, unix.ENFILE) {
			return nil, err
		}
	}
	u, err := OpenUnkept(o.Root, tid)
	if err != nil {
		return nil, err
	}
	b.unkept.Add(1)
	b.warn()
	return &budgeted{TaskHandle: u, count: &b.unkept}, nil
}

// warn says once that tasks go without a kept fd.
func (b *FDBudget) warn() {
	if b.warned || b.Logger == nil {
		return
	}
	b.warned = true
	b.Logger.Warn("open-file limit reached, or the fds the memory limit allows: some threads are read by open, read and close on every pass, which costs more CPU; raise RLIMIT_NOFILE (LimitNOFILE=, or grant CAP_SYS_RESOURCE) above the node's thread count, and the memory limit by about 4.5 KiB a thread",
		"threads_kept", b.Kept(), "fd_budget", b.Max)
}

// budgeted gives its place in an FDBudget back on Close.
type budgeted struct {
	container.TaskHandle
	count  *atomic.Int64
	closed bool
}

func (h *budgeted) Close() error {
	if h.closed {
		return nil
	}
	h.closed = true
	h.count.Add(-1)
	return h.TaskHandle.Close()
}
