// Package container keeps the accounting: a node-wide table of live tasks,
// per-cgroup totals that include their descendants, and immutable
// snapshots of both for readers. Cgroups are known by kernel id, tasks by
// id and start time; no series it exports ever falls, nothing is taken
// for gone without proof, and every thread counts exactly once whatever
// the timing of passes and exit records. The rules and their reasons are
// in docs/design.md.
//
// A Table is owned by one goroutine. Snapshots are immutable and may be
// shared freely.
package container
