// Package container keeps the accounting: a node-wide table of live tasks,
// per-cgroup totals that include their descendants, and immutable snapshots
// of both for readers.
//
// Each pass takes a cgroupfs.Listing (cgroup id, path and its own thread
// ids) and reads every listed thread exactly once through a TaskOpener's
// handles. A cgroup is known by its kernel id (the inode of its directory);
// its path is a label. A
// thread's increase since the previous pass is added to the cgroup that
// lists it now, and the totals are rolled up to every ancestor in memory,
// so the cost of a pass does not depend on the depth of the hierarchy.
//
// The rules the table keeps:
//
//  1. A total never decreases: not when a task exits, not on PID reuse, not
//     when a task moves to another cgroup, not when a cgroup is removed (its
//     totals stay in its nearest ancestor that still exists), not when a
//     cgroup is made again under a removed one's path or its kernel counter
//     starts over (the path's series go on from where they were), not on a
//     read error.
//  2. Only proof makes a thing gone: the walk leaves out only cgroups it
//     found removed (ENOENT, ENODEV), and a handle retires only a task it
//     found gone (ESRCH, ENOENT). A cgroup whose children could not be
//     listed keeps its known descendants as they were, and a task that
//     could not be read keeps its last value; the next good read catches
//     up. Failures are counted by Reason, and such a pass is partial.
//  3. Each thread is read once per pass, however deep the hierarchy.
//  4. A task that moves between cgroups brings only the increase since the
//     previous pass to its new cgroup; the time already counted stays where
//     it was.
//  5. The table holds at most the tasks of the current and the previous
//     pass. Go maps never give back their buckets, so a map that grew far
//     beyond the live count is rebuilt at its live size.
//  6. A task's time counts up to its exit when an exit source delivers its
//     final counters (Table.Exit), and otherwise up to the last read that
//     saw it. A record counts once whatever its lag: a retired task is
//     remembered until the source has delivered everything written well
//     after it (Table.ExitsDelivered), and a record of a cgroup no pass
//     has listed yet waits for the pass that lists it.
//
// Tasks are named by id and start time. A handle opened for one task never
// reads another task that takes its id (see package schedstat), so a reused
// id shows as a handle that reports the task gone while the id is listed
// again: the old task keeps what was counted for it and the new one counts
// from its own start.
//
// A task that is alive but missing from one pass's listing (it moved
// between two cgroups while the walk was between them) or that exited but
// is not yet reaped (zombies vanish from cgroup files at once) is still read
// through its handle, so neither a missed listing nor a zombie's final
// stretch is lost or counted twice.
//
// A Table is owned by one goroutine. Snapshots are immutable and may be
// shared freely.
package container
