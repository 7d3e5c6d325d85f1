// Package taskiter is a task source that lists and reads every thread on
// the node with one read per pass: a BPF task iterator (iter/task) emits,
// for each task, its id, start time, the three schedstat counters and its
// cgroup id, and the accounting reads them through the same interfaces as
// the procfs source (cgroupfs.Lister and container.TaskOpener).
//
// What it reads:
//
//   - /sys/kernel/btf/vmlinux, the running kernel's BTF: the offsets of
//     task_struct's pid, exit_state, start_boottime, se.sum_exec_runtime,
//     sched_info.run_delay, sched_info.pcount, cgroups and thread_pid; of
//     css_set.dfl_cgrp (v2) or css_set.subsys[<controller>_cgrp_id] and
//     cgroup_subsys_state.cgroup (v1); of cgroup.kn, kernfs_node.id,
//     pid.level, pid.numbers and upid.nr. The program is assembled at load
//     time with those offsets, so one binary runs on many kernels and
//     needs no compiler.
//   - Every task, through one read of the iterator per pass: 48 bytes a
//     task, read into a buffer reused from pass to pass.
//   - The walked hierarchy's directories and each cgroup's own CPU counter
//     (cpuacct.usage or cpu.stat), through the procfs source's own walk
//     (cgroupfs.Hierarchy.ListTree), but no thread list (tasks,
//     cgroup.threads). The program names a task's
//     cgroup by the kernfs id of its cgroup in the walked hierarchy itself
//     (dfl_cgrp on v2; the walked controller's css on v1, so a hybrid
//     node's v1 cpuacct hierarchy needs no mapping through the unified
//     one), and a kernfs id is the inode number of the cgroup's directory:
//     the walk gives each cgroup's (cgroupfs.Cgroup.ID), which maps ids
//     to paths.
//
// The rules it keeps:
//
//  1. Ids as the reader sees them: the iterator visits the tasks of the
//     reader's PID namespace, and the program reports each by its id at
//     the reader's level (task->thread_pid->numbers[level].nr, the level
//     being the reading thread's own), so reuse detection and everything
//     else behave as with the procfs source in any PID namespace.
//  2. Identity is the id and the start time in nanoseconds: a handle whose
//     id is missing from the last read, or held there by a task with
//     another start time, reads as gone (unix.ESRCH) and never reads the
//     other task.
//  3. Zombies are read (their counters are final) but not listed, as
//     cgroup files do not list them.
//  4. A steady-state pass allocates nothing per task: the read buffer, the
//     records and the tid index are reused; the index is rebuilt when it
//     once held far more tasks than it does now.
//  5. The source is optional: without kernel BTF, a walked hierarchy the
//     program can name (a v1 one needs a controller), or the privileges
//     (CAP_BPF and CAP_PERFMON, or root), Open fails with ErrUnsupported
//     and Select in Auto mode falls back to procfs.
//
// A Source, its Lister and its Opener belong to the goroutine that owns
// the table.
package taskiter
