// Package procsource is the procfs task source. A Task keeps a task's
// /proc/<tid>/schedstat open from the moment the task is first seen and
// re-reads it with one pread at offset 0 into a buffer on the stack, so a
// steady-state read is one syscall and no allocation, within a budget of
// fds set by the open-file limit. A kept fd is bound to the task it was
// opened for: once that task is reaped the fd fails with ESRCH, even if a
// new task takes the same id, so PID reuse is detected exactly. Beyond the
// budget, or when the kernel has no fd left, a task is read by open, read
// and close on every pass (Unkept), so counting goes on, slower, at any
// limit, its identity checked by start time. It reads /proc/1/stat once, to
// tell a procfs mounted with hidepid, where a listed task that cannot be
// found is a permission error, not an exit. The same budget bounds the
// cgroup counter files the walk keeps open (FDBudget is a
// cgroupfs.FDKeeper): a quarter of it while tasks keep fds, all of it
// when they do not.
//
// An Opener belongs to the goroutine that owns the table it feeds; its
// Collector may be collected from any goroutine.
package procsource
