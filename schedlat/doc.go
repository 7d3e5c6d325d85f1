// Package schedlat measures, per cgroup, the length of each runqueue wait
// (a latency histogram) and who took the CPU when a task was switched away
// while still runnable (preemption attribution), with an eBPF program on
// the scheduler's sched_switch tracepoint assembled at load time from the
// running kernel's BTF (/sys/kernel/btf/vmlinux).
//
// Waits are derived from the kernel's own per-task counters, so the
// histogram and the runqueue counters cannot disagree; the rules and
// bounds are in README.md. Source is safe for use from any goroutine.
package schedlat
