// Package exitcapture delivers every exiting task's final schedstat
// counters to the accounting, so that a task's time counts up to its exit
// and tasks born and dead between two passes count at all.
//
// What it reads:
//
//   - /sys/kernel/btf/vmlinux, the running kernel's BTF: the arguments of
//     the sched_switch tracepoint and the offsets in task_struct of pid,
//     tgid, start_boottime, se.sum_exec_runtime, sched_info.run_delay,
//     sched_info.pcount (and __state on kernels before 5.18, whose
//     sched_switch has no prev_state argument). The program is assembled
//     at load time with those offsets, so one binary runs on many kernels
//     and needs no compiler.
//   - Every context switch, through a BTF tracepoint (tp_btf/sched_switch),
//     which needs neither tracefs nor kprobes. A dead task switches away
//     exactly once, with prev_state TASK_DEAD, after its counters took
//     their final values and with prev still current: the program sends
//     one record then (tid, tgid, start time, the three counters, and the
//     ids of the task's cgroup in the walked hierarchy and of its
//     ancestors) through a ring buffer. Every other switch costs it four
//     instructions.
//   - Nothing else: a cgroup id is the inode number of the cgroup's
//     directory in the walked hierarchy (v1 or cgroup2), the id the pass's
//     listing knows it by, so the accounting places records itself.
//
// The rules it keeps:
//
//  1. Nothing blocks a pass: a goroutine of the Source moves records from
//     the ring buffer to a bounded queue, and Drain hands the queue over
//     without waiting for the kernel.
//  2. Memory is bounded: the ring buffer and the queue have fixed sizes;
//     a record that finds either full is counted lost, never waited for.
//  3. The accounting stays exactly-once at any pass rate and reader lag:
//     records go to container.Table.Exit, and Feed tells the table up to
//     when every record has been delivered (the reader notes each time it
//     finds the ring empty), so the table remembers retired tasks until
//     their records can no longer come.
//  4. Exit capture is optional: without kernel BTF, a walked hierarchy
//     the program can name, the host's PID namespace (records carry host
//     ids) or the privileges
//     (CAP_BPF and CAP_PERFMON, or root), Open fails with ErrUnsupported
//     and Select in Auto mode falls back to polling.
//
// A Source is owned by its creator; Drain and Feed run on the goroutine
// that owns the table, Stats and Close on any.
package exitcapture
