package cgroupfs

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// InitialPIDNamespaceInode is the inode number of the initial (host) PID
// namespace, PROC_PID_INIT_INO in the kernel: fixed, on every boot and
// every kernel.
const InitialPIDNamespaceInode = 4026531836

// InitialPIDNamespace reports whether the calling process runs in the
// initial PID namespace, from the inode of <procRoot>/self/ns/pid.
//
// The kernel translates the thread ids in cgroup.threads and tasks into
// the reader's PID namespace. Outside the initial one, tasks of other
// namespaces are listed as 0 (before Linux 6.18) or left out (6.18 and
// later), so a daemon in a pod sees only its own tasks unless the pod has
// hostPID: true. Callers warn once and export the answer.
//
// procRoot must be a procfs mounted in the initial namespace's view, such
// as the host's /proc. An error names the path.
func InitialPIDNamespace(procRoot string) (bool, error) {
	path := filepath.Join(procRoot, "self", "ns", "pid")
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return false, fmt.Errorf("cgroupfs: %s: %w", path, err)
	}
	return st.Ino == InitialPIDNamespaceInode, nil
}
