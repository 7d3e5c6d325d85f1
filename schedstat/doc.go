// Package schedstat reads the kernel's per-task scheduler statistics.
//
// It reads two files per task and nothing else:
//
//   - /proc/<tid>/schedstat: three unsigned decimals, the task's time on a
//     CPU (sum_exec_runtime, ns), its time waiting on a runqueue
//     (run_delay, ns) and the number of timeslices it ran (pcount). The
//     file describes one thread: for a process id it is the main thread
//     only, so callers list thread ids, not process ids.
//   - /proc/<tid>/task/<tid>/stat, once per task, for field 22, the start
//     time in clock ticks since boot, which together with the id names the
//     task. This is the thread's own stat: /proc/<tid>/stat describes the
//     whole thread group, and the kernel sums every thread's CPU time to
//     write it, which makes it cost as much as the group is large.
//
// Parsing is apart from reading: Parse and ParseStartTime are pure and
// allocate nothing on success. A Task keeps the schedstat file open from the
// moment the task is first seen and re-reads it with one pread at offset 0
// into a buffer the caller reuses, so a steady-state read is one syscall and
// no allocation. A kept fd is bound to the task it was opened for: once that
// task is reaped the fd fails with ESRCH, even if a new task takes the same
// id, so PID reuse is detected exactly. IsGone tells that case, and ENOENT
// from opening a task that already exited, from real errors.
package schedstat
