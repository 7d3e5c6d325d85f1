// Package cgroupfs finds the cgroup hierarchy to walk on v1, v2 and hybrid
// nodes and lists, on every pass, each cgroup in it with its own threads and
// its own CPU counter. It also reads what a cgroup's path says about it
// (ParseIdentity) and whether the daemon sees the host's PID namespace
// (InitialPIDNamespace).
//
// # Kernel files
//
// Open looks at the cgroup root once: statfs(2) of the root and of
// <root>/<hierarchy> (cgroup2, cgroup or tmpfs magic), and, for a v1
// controller mounted under another name (such as "cpu,cpuacct"), the
// process's mountinfo through github.com/opencontainers/cgroups. A pure v2
// root is walked itself; a v1 or hybrid root has its cpuacct hierarchy
// walked (then cpu, then name=systemd), because kubelet puts containers
// there on such nodes and cpuacct holds the counter.
//
// Each pass reads, for every cgroup:
//
//   - its threads (List; ListTree leaves them out, for a task source that
//     knows each thread's cgroup already): cgroup.threads on v2, tasks on v1. Not cgroup.procs,
//     which lists process ids only, and loses the threads of a process
//     whose leader has exited;
//   - its CPU counter, descendants included: usage_usec of cpu.stat on v2
//     (present in every v2 cgroup, with or without the cpu controller), or
//     cpuacct.usage in nanoseconds on v1; when the walked v1 hierarchy is
//     not cpuacct, the counter of the cgroup at the same path in the
//     cpuacct hierarchy, if there is one;
//   - its CFS bandwidth counters (nr_periods, nr_throttled, throttled time,
//     nr_bursts, burst time): from the cpu.stat just read on v2, where
//     the cpu controller adds them; on v1 from cpu.stat of the cgroup
//     itself when the cpu controller is bound to the walked hierarchy, or
//     of the cgroup at the same path in the cpu hierarchy. Absent where
//     the file or its keys are;
//   - its CPU pressure (cpu.pressure some and full totals): its own on
//     v2, or that of the cgroup at the same path in the v2 hierarchy
//     beside a v1 one; none where the v2 root has no cpu.pressure (psi=0,
//     no CONFIG_PSI) or a cgroup hides it (cgroup.pressure 0);
//   - its inode number and link count (statx(2)): the inode number is the
//     cgroup's ID, the id BPF programs see; on a cgroup filesystem a
//     directory's count is 2 plus its subdirectories, so a cgroup with a
//     count of 2 has no children;
//   - the entries of its directory (getdents64(2)), only when it has
//     children.
//
// InitialPIDNamespace reads the inode of /proc/self/ns/pid. The thread ids
// in cgroup files are translated into the reader's PID namespace, so a
// daemon outside the host's sees other tasks as 0 (before Linux 6.18) or
// not at all (6.18 and later); ParseTIDs leaves zeros out.
//
// # Rules
//
// The package only reads: it creates, writes and moves nothing.
//
// Races with the kernel and with other processes are normal. A cgroup
// removed while it is walked (ENODEV reading a file of a removed cgroup,
// ENOENT once its directory is gone, or has been made anew under the same
// name, which the inode number tells) is left out of that pass, not
// reported. Any other error on a cgroup below the root (EACCES, a missing
// file, a malformed one) keeps the cgroup in the listing with what could be
// read and its Err set, and is counted in Listing.Errors. A malformed
// threads file is an error wrapping ErrParse and costs that cgroup's
// threads only. An error reading the root fails the pass.
//
// A pass allocates nothing in steady state: each cgroup's path strings and
// NUL-terminated file names are built once and cached by directory until
// the cgroup goes; file contents are read into one buffer that grows to
// the largest file and is kept; thread ids are parsed by hand into the
// Listing's reused slices. One goroutine at a time may call List on a
// Hierarchy.
//
// # Kept counter files
//
// Thread lists are opened, read to their end and closed on every pass.
// The counter files (the CPU counter, cpu.stat for bandwidth,
// cpu.pressure) can be held open instead (Hierarchy.KeepFiles), for as
// many fds as an FDKeeper allows, and read with one pread at offset 0 per
// pass, which makes the kernel show the file afresh (checked on 6.18 for
// cpuacct.usage, v1 and v2 cpu.stat and cpu.pressure, whose poll triggers
// are made only by a write). Every cgroup control file is one seq_file
// record, generated whole before it is copied out, so a read that does
// not fill the buffer has all of it. A kept fd of a removed cgroup reads
// ENODEV, also once a cgroup of the same name has been made: the fd is
// closed and the file opened again by name, which reads the new cgroup or
// fails with ENOENT, and the rules above apply to that. Each kept fd costs
// the kernel about 4.4 KiB (measured: 4,456 bytes per cpuacct.usage fd
// after its first read, 3,000 fds, v1 memory controller), charged to the
// reader's memory cgroup. Files of cgroups the walk forgets are closed in
// the pass that forgets them, and Hierarchy.Close closes the rest.
//
// # Full walk or inotify
//
// Every pass walks the whole hierarchy. Inotify (as cAdvisor uses) reports
// cgroups made and removed, but not threads joining or leaving one, so
// even with it every pass must read each cgroup's threads and counter
// files; all it could save is finding the children. BenchmarkWalk
// measures both on 1,000 real cgroups (9 slices of 110) on the test machine
// (kernel 6.18, 2 vCPUs, AMD EPYC, where a syscall costs about 1.7 us):
//
//	go test -run '^$' -bench Walk -benchtime=2s -count=5 ./cgroupfs/
//
//	median per pass of 1,000 cgroups  v1 cpuacct  v2 unified  allocs
//	walk (this package)                  16.7 ms     16.3 ms       0
//	walk, readdir of every cgroup        24.7 ms     24.7 ms       0
//	files only (inotify's floor)         14.3 ms     13.8 ms       0
//	filepath.WalkDir + os.ReadFile       30.6 ms     35.8 ms  54-73k
//
// Skipping the readdir of childless cgroups (most of them: containers)
// brings the full walk within 1.2 times the files-only floor: inotify could
// save about 2.5 ms per 1,000 cgroups per pass, 0.25% of one CPU at the
// default one-second interval. That does not pay for watches to keep in
// step with the tree, the per-user watch limit, queue overflows that force
// a full rescan anyway, and the race between a mkdir and its watch. So the
// walk is repeated in full. A further 2 of the 9 syscalls per childless
// cgroup could go by taking a short read as the end of a file, which holds
// for seq_file today but is not promised, so a wrong guess would drop
// threads silently; the walk reads each file to its end.
package cgroupfs
