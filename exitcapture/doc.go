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
//     one record then (tid, tgid, start time, v2 cgroup id, the three
//     counters) through a ring buffer. Every other switch costs it four
//     instructions.
//   - The unified (cgroup2) hierarchy's directories: a v2 cgroup id is the
//     inode number of the cgroup's directory, and a record is attributed
//     to that directory's path relative to the hierarchy root, which on a
//     hybrid node names the same cgroup in the walked v1 hierarchy.
//
// The rules it keeps:
//
//  1. Nothing blocks a pass: a goroutine of the Source moves records from
//     the ring buffer to a bounded queue, and Drain hands the queue over
//     without waiting for the kernel.
//  2. Memory is bounded: the ring buffer and the queue have fixed sizes;
//     a record that finds either full is counted lost, never waited for.
//     The cgroup index holds the cgroups of two walks.
//  3. The accounting stays exactly-once: records go to container.Table.Exit,
//     which adds a tracked task's final increase, or a task no pass saw in
//     full, whichever of the record and the pass that finds it gone comes
//     first.
//  4. A record whose cgroup was removed goes to the nearest ancestor that
//     still exists (the table resolves the last known path), and one whose
//     cgroup was never found goes to the root; both are counted.
//  5. Exit capture is optional: without kernel BTF, a cgroup2 hierarchy,
//     the host's PID namespace (records carry host ids) or the privileges
//     (CAP_BPF and CAP_PERFMON, or root), Open fails with ErrUnsupported
//     and Select in Auto mode falls back to polling.
//
// A Source is owned by its creator; Drain and Feed run on the goroutine
// that owns the table, Stats and Close on any.
package exitcapture
