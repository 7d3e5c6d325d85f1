package procsource

import (
	"fmt"
	"log/slog"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"golang.org/x/sys/unix"
)

// Config says where New finds procfs and the cgroups.
type Config struct {
	// Root is the procfs mount, such as "/proc".
	Root string
	// CgroupRoot is the cgroup mount root, such as "/sys/fs/cgroup", where
	// the daemon's own memory limit is read; "" reads none.
	CgroupRoot string
	Logger     *slog.Logger
}

// New checks that c.Root is a procfs mount, tells whether it hides other
// users' tasks (saying so once in the log), raises the open-file limit as
// far as it goes, and returns an Opener whose budget keeps the fds the
// limit allows, less a reserve for everything else, and no more than an
// eighth of the process's memory headroom pays for: the kernel charges
// each kept fd to the process's memory cgroup.
func New(c Config) (Opener, error) {
	if err := Check(c.Root); err != nil {
		return Opener{}, err
	}
	hidden := hidesTasks(c.Root)
	if hidden {
		c.Logger.Error("procfs hides other users' tasks (mounted with hidepid): their time cannot be read and each such read is counted in schedstatd_read_errors_total{reason=\"permission\"}; run as root, join the procfs gid= group, or mount procfs without hidepid", "path", c.Root)
	}
	budget := &FDBudget{Max: fdBudget(raiseFDLimit(c.Logger)), CgroupShare: DefaultCgroupShare, Logger: c.Logger}
	if c.CgroupRoot != "" {
		m, ok, err := cgroupfs.SelfMemoryLimit(c.CgroupRoot)
		switch {
		case err != nil:
			c.Logger.Warn("could not read the daemon's memory limit; task fds are bounded by the open-file limit only", "err", err)
		case ok:
			if n := memoryBudget(m); n < budget.Max {
				c.Logger.Info("task fds bounded by the memory limit: threads beyond are read by open, read and close",
					"fd_budget", n, "limit_bytes", m.LimitBytes, "usage_bytes", m.UsageBytes, "file", m.File)
				budget.Max = n
			}
		}
	}
	return Opener{Root: c.Root, Budget: budget, Hidden: hidden}, nil
}

// KeptFDBytes is what the kernel charges the reader's memory cgroup for one
// kept /proc/<tid>/schedstat fd once read: the file, and the page of its
// seq_file buffer, which stays until the fd is closed. Measured: 4,501 and
// 4,573 bytes per fd over 5,000 and 15,000 fds (kernel 6.18, v1 memory
// controller; memory.usage_in_bytes before and after).
const KeptFDBytes = 4608

// memoryShare is the part of the memory headroom at start that kept fds
// may take: the rest is for the daemon's heap, which grows with the
// node's threads too, and the fds that unkept reads open for a moment.
const memoryShare = 8

// memoryBudget returns how many fds an eighth of the memory headroom of m
// pays for.
func memoryBudget(m cgroupfs.MemoryLimit) int {
	if m.UsageBytes >= m.LimitBytes {
		return 0
	}
	return int((m.LimitBytes - m.UsageBytes) / memoryShare / KeptFDBytes)
}

// Check fails unless dir is a procfs mount.
func Check(dir string) error {
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

// fdWant is the open-file limit asked for: one fd is kept per live thread
// on the node.
const fdWant = 1 << 20

// raiseFDLimit raises RLIMIT_NOFILE as far as the kernel and privileges
// allow, since the source keeps one fd per live thread, and returns the
// soft limit it got. The Go runtime already raises the soft limit to the
// hard one; with CAP_SYS_RESOURCE the hard limit can go up to fs.nr_open
// too.
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

// fdBudget returns how many task fds may be kept open under the soft
// limit; tasks beyond it are read by open, read and close.
func fdBudget(limit uint64) int {
	return max(0, int(min(limit, 1<<30))-fdReserve(limit))
}

// SharedBudget returns a budget of one n-th of the task fds the soft
// open-file limit allows, for one of n tables that read tasks in one
// process (tests run several side by side), so that together they stay
// under the limit and read the rest unkept.
func SharedBudget(n int) *FDBudget {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		lim.Cur = 1024
	}
	return &FDBudget{Max: fdBudget(lim.Cur) / max(n, 1)}
}
