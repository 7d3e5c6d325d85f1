// Package benchmarks holds the whole-pipeline benchmarks of schedstatd, each
// beside the baselines it is measured against, in the same run:
//
//   - BenchmarkMapGrowth: memory of the task table under churn, against a
//     pid map never pruned and one pruned of vanished pids (synthetic).
//   - BenchmarkRead: the cost of reading one real thread's
//     /proc/<tid>/schedstat with os.ReadFile, with open+read+close, and
//     with a pread on an fd kept open.
//   - BenchmarkPass: a whole pass (walk, reads, accounting) over a real
//     cgroup v1 tree of sleeping threads, against a bare pread of every
//     task on kept fds and an os.ReadFile pass with pid maps.
//   - BenchmarkDepth: a pass over the same real threads in hierarchies 1, 4
//     and 8 levels deep, against handlers that re-read every level.
//   - BenchmarkOpen: the first sight of a task, and a read without a kept
//     fd, for threads of processes of 100 to 10,000 threads.
//   - BenchmarkMetrics: the /metrics render of 1,000 and 5,000 cgroups,
//     written straight into the response, against client_golang's
//     registry and expfmt.
//   - BenchmarkDaemon: the real daemon binary over real threads and
//     cgroups for a minute (make bench-daemon), beside the procfs source
//     and a cAdvisor-style reader in the same run.
//
// The real-thread benchmarks time a pass two ways: back to back, and as
// the daemon runs it, one pass after a sleep, timed by the process's CPU
// clock. Run with -short (make bench-smoke does) they use the smallest
// size of each. The benchmarks that make cgroups need root. PERFORMANCE.md
// has the figures of one run and what they mean.
package benchmarks
