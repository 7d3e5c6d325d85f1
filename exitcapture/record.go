package exitcapture

import (
	"encoding/binary"

	"github.com/schedstatd/schedstatd/schedstat"
)

// userHZ is USER_HZ, the unit of the start time in /proc/<tid>/stat:
// 100 on every architecture Linux runs containers on.
const userHZ = 100

// record is one exiting task's final counters, as the kernel sends it.
type record struct {
	// TID is the task's thread id and TGID its process id, in the initial
	// PID namespace.
	TID, TGID int32
	// StartNanoseconds is the task's start time in nanoseconds since boot
	// (task_struct.start_boottime).
	StartNanoseconds uint64
	// CgroupID is the task's cgroup v2 id: the inode number of its cgroup's
	// directory in the unified hierarchy.
	CgroupID uint64
	// Final holds the task's counters at its last switch away.
	Final schedstat.Stat
}

// StartTime returns the start time in clock ticks since boot, as field 22
// of /proc/<tid>/stat shows it and container.Exit expects it.
func (r record) StartTime() uint64 {
	return r.StartNanoseconds / (1e9 / userHZ)
}

// parseRecord decodes a record written by the program. It reports false if
// b is too short.
func parseRecord(b []byte) (record, bool) {
	if len(b) < recordSize {
		return record{}, false
	}
	ne := binary.NativeEndian
	return record{
		TID:              int32(ne.Uint32(b[recTID:])),
		TGID:             int32(ne.Uint32(b[recTGID:])),
		StartNanoseconds: ne.Uint64(b[recStart:]),
		CgroupID:         ne.Uint64(b[recCgroup:]),
		Final: schedstat.Stat{
			RunNanoseconds:  ne.Uint64(b[recRun:]),
			WaitNanoseconds: ne.Uint64(b[recWait:]),
			Timeslices:      ne.Uint64(b[recSlices:]),
		},
	}, true
}
