// Package state keeps a task table's State in a file, so that a restarted
// daemon continues every series where it was: the binary encoding (Encode,
// Decode), the checks that a file belongs to this boot and hierarchy, the
// atomic write, and a Keeper that writes on a schedule from the poller's
// goroutine and restores at start.
//
// It reads /proc/sys/kernel/random/boot_id and the root cgroup's
// directory inode; it writes only the state file, a temporary file beside
// it and a lock file. A file that cannot be trusted whole is refused
// whole: nothing of it is loaded.
package state
