// Package aggregate is a source that keeps per-cgroup totals in the
// kernel, so a pass costs the daemon work in proportion to cgroups, not
// threads. A BPF task iterator (iter/task) visits every live task once per
// pass and adds the increase of its three schedstat counters since its
// last visit (kept in BPF task storage, which dies with the task, so a
// reused id or a new task starts from nothing by construction) to the
// totals of the task's cgroup in the walked hierarchy, a hash map keyed by
// the cgroup's id (the inode of its directory); it emits nothing per
// task. A program on tp_btf/sched_process_free, which fires once per task
// after its final switch away, adds the task's last stretch the same way,
// and with Options.Moves one on tp_btf/cgroup_attach_task credits a moved
// task's increase since its last visit to the cgroup it left.
// The daemon reads the map with batch lookups, and container.NewCgroupTable
// credits each cgroup the increase of its totals. With Options.PinPath the
// task storage and the totals are pinned in bpffs, so a daemon restarted
// on the same boot goes on with them from its state file (Source.Begin).
//
// It reads /sys/kernel/btf/vmlinux (field offsets: task_struct's
// exit_state, se.sum_exec_runtime, sched_info.run_delay,
// sched_info.pcount, cgroups; the path to a cgroup's kernfs id and its
// parent, as the other BPF sources) and the walked hierarchy's
// directories and counters (cgroupfs.Hierarchy.ListTree). The rules it
// keeps, and what a task's first visit credits, are in docs/design.md.
//
// A Source belongs to the goroutine that owns the table.
package aggregate
