// Package procsource is the procfs task source: it opens a task's
// /proc/<tid>/schedstat and keeps the fd for as long as the task lives,
// reading it with one pread per pass (package schedstat), within a budget
// of fds set by the open-file limit. Beyond the budget, or when the kernel
// has no fd left, a task is read by open, read and close on every pass, so
// counting goes on, slower, at any limit. It reads /proc/1/stat once, to
// tell a procfs mounted with hidepid, where a listed task that cannot be
// found is a permission error, not an exit. The same budget bounds the
// cgroup counter files the walk keeps open (FDBudget is a
// cgroupfs.FDKeeper): a quarter of it while tasks keep fds, all of it
// when they do not.
//
// An Opener belongs to the goroutine that owns the table it feeds; its
// Collector may be collected from any goroutine.
package procsource
