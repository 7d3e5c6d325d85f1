// Package schedstat is the kernel's per-task scheduler statistics: the
// counters (Stat), the parsers of the two files they come from, and what
// tells a task gone (IsGone). The procfs source (package procsource) reads
// the files; the BPF sources read the same fields from the kernel.
//
// The files, per task:
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
// Parse and ParseStartTime are pure and allocate nothing on success.
// IsGone tells ESRCH from a kept fd whose task was reaped, and ENOENT from
// opening a task that already exited, from real errors. StartTicks and
// BootTicks put times in the clock ticks of start times.
package schedstat
