package state

import (
	"errors"
	"fmt"
	"io/fs"
)

// The file is little-endian: a 16-byte header (Magic, the format version
// as uint16, two reserved zero bytes, the body length as uint32), the
// body, and a CRC-32C of header and body. Numbers in the body are
// varints; strings a uvarint length and their bytes. The body holds the
// Origin, then the cgroups (parents first, a path relative to its
// parent's where it extends it), the tasks (cgroups by index), the
// tombstones and, from version 2, what a table of per-cgroup totals
// credited from its source (the store's identity, then each cgroup id
// with its credited totals) and the retired tasks, as the tasks; a
// version 1 file has neither, as if the totals ended with their source
// and no exit record were owed. From version 3 the body goes on with the
// runqueue latency and preemption totals served, by cgroup path; an
// earlier file has none, as if they started with the daemon. From
// version 4 it ends with the cgroups' late run (CgroupState.LateRun),
// for those that have any, by cgroup index; an earlier file has none. A varint encoding keeps a 10,000-thread node's file near
// 200 KiB, written in well under a millisecond; JSON would be several
// times larger and slower to write and to check.
const (
	// Magic opens every state file.
	Magic = "SCHDSTAT"
	// Version is the format this package writes; it reads this one and
	// every earlier one, and refuses a file of a later version with
	// ErrNewer.
	Version = 4

	headerSize = 16
	crcSize    = 4
	// MaxFileSize bounds what Decode accepts: far above the file of a
	// node at any real thread count.
	MaxFileSize = 256 << 20
)

// The reasons a file is refused. Each error Decode and Check return wraps
// one of them.
var (
	// ErrTruncated is a file shorter than its header says.
	ErrTruncated = errors.New("state file truncated")
	// ErrCorrupt is a file whose checksum or contents are wrong.
	ErrCorrupt = errors.New("state file corrupt")
	// ErrNotState is a file that is not a state file at all.
	ErrNotState = errors.New("not a schedstatd state file")
	// ErrNewer is a file of a later format version.
	ErrNewer = errors.New("state file of a newer format")
	// ErrForeign is a file of another boot, node or hierarchy.
	ErrForeign = errors.New("state file of another boot or hierarchy")
)

// Origin is what a state file must share with the running daemon to be
// loaded: the boot (and so the node), and the cgroup hierarchy walked.
type Origin struct {
	// BootID is /proc/sys/kernel/random/boot_id, new at every boot.
	BootID string
	// Hierarchy and Dir are the walked hierarchy's name and root
	// directory (cgroupfs.Hierarchy Name and Dir); RootInode is the
	// inode of that directory.
	Hierarchy, Dir string
	RootInode      uint64
}

// Check returns nil if a file written under saved may be loaded by a
// daemon running under o, and otherwise an error wrapping ErrForeign that
// says what differs.
func (o Origin) Check(saved Origin) error {
	switch {
	case saved.BootID != o.BootID:
		return fmt.Errorf("%w: written in boot %s, this is boot %s", ErrForeign, saved.BootID, o.BootID)
	case saved.Hierarchy != o.Hierarchy || saved.Dir != o.Dir:
		return fmt.Errorf("%w: written for hierarchy %s at %s, this daemon walks %s at %s", ErrForeign, saved.Hierarchy, saved.Dir, o.Hierarchy, o.Dir)
	case saved.RootInode != o.RootInode:
		return fmt.Errorf("%w: written for root cgroup inode %d, %s is inode %d now", ErrForeign, saved.RootInode, o.Dir, o.RootInode)
	}
	return nil
}

// Reason names why a file was refused, as the self metric's label:
// "missing", "truncated", "corrupt", "not_state", "newer", "foreign" or
// "unreadable".
func Reason(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "missing"
	case errors.Is(err, ErrTruncated):
		return "truncated"
	case errors.Is(err, ErrCorrupt):
		return "corrupt"
	case errors.Is(err, ErrNotState):
		return "not_state"
	case errors.Is(err, ErrNewer):
		return "newer"
	case errors.Is(err, ErrForeign):
		return "foreign"
	}
	return "unreadable"
}
