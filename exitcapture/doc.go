// Package exitcapture delivers every exiting task's final schedstat
// counters to the accounting, so that a task's time counts up to its exit
// and tasks born and dead between two passes count at all.
//
// It reads the running kernel's BTF (/sys/kernel/btf/vmlinux), to
// assemble its program at load time, and every task as the kernel frees
// it (tp_btf/sched_process_free, which fires after the task's reap and
// its final switch away, so its counters are final, and never on a
// context switch). Where that tracepoint cannot be attached it reads
// every context switch instead (tp_btf/sched_switch, four instructions
// unless the previous task is dead, which switches away once, after its
// counters took their final values). The program sends the task's id,
// start time, counters and the ids of its cgroup in the walked hierarchy
// and of that cgroup's ancestors through a ring buffer, and a goroutine of the
// Source moves records into a bounded queue that Feed hands to the table.
// Memory is bounded; a record that finds the ring or the queue full is
// counted lost. A second program, at tp_btf/cgroup_attach_task, sends a
// task's counters when it moves into another cgroup of the walked
// hierarchy, through the same ring, so a move splits the task's time
// exactly (Table.Migrate). How a record counts exactly once is in
// docs/design.md.
//
// A Source is owned by its creator; Drain and Feed run on the goroutine
// that owns the table, Stats and Close on any.
package exitcapture
