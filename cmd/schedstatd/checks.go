package main

import (
	"fmt"
	"log/slog"

	"golang.org/x/sys/unix"
)

// checkProcfs fails unless dir is a procfs mount.
func checkProcfs(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("--path.procfs %s: %w", dir, err)
	}
	if st.Type != unix.PROC_SUPER_MAGIC {
		return fmt.Errorf("--path.procfs %s: not a procfs mount (filesystem type 0x%x)", dir, st.Type)
	}
	return nil
}

// hidesTasks reports whether the procfs at dir hides other users' tasks
// from this process (mounted with hidepid=1 or 2, or "invisible", and the
// process neither root nor in its gid= group): then /proc/1, which always
// exists and belongs to root, cannot be found.
func hidesTasks(dir string) bool {
	var st unix.Stat_t
	return unix.Stat(dir+"/1/stat", &st) == unix.ENOENT
}

// fdWant is the open-file limit the daemon asks for: one fd is kept per
// live thread on the node.
const fdWant = 1 << 20

// raiseFDLimit raises RLIMIT_NOFILE as far as the kernel and privileges
// allow, since the table keeps one fd per live thread, and returns the soft
// limit it got. The Go runtime already raises the soft limit to the hard
// one; with CAP_SYS_RESOURCE the hard limit can go up to fs.nr_open too.
func raiseFDLimit(logger *slog.Logger) uint64 {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	for want := uint64(fdWant); want > lim.Max; want /= 2 {
		if unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: want, Max: want}) == nil {
			lim = unix.Rlimit{Cur: want, Max: want}
			break
		}
	}
	if lim.Cur < lim.Max {
		if unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: lim.Max, Max: lim.Max}) == nil {
			lim.Cur = lim.Max
		}
	}
	logger.Debug("open-file limit", "soft", lim.Cur, "hard", lim.Max)
	return lim.Cur
}

// fdReserve is how many fds, out of the soft limit, are left for
// everything but kept task fds: listeners, scrapes, the cgroup walk, the
// fds an unkept read opens for a moment.
func fdReserve(limit uint64) int {
	return int(min(1024, max(64, limit/10)))
}

// taskFDBudget returns how many task fds the table may keep open under the
// soft limit; tasks beyond it are read by open, read and close.
func taskFDBudget(limit uint64) int {
	return max(0, int(min(limit, 1<<30))-fdReserve(limit))
}
