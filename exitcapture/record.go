package exitcapture

import (
	"encoding/binary"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedstat"
)

// record is one exiting task's final counters, as the kernel sends it.
type record struct {
	// TID is the task's thread id and TGID its process id, in the initial
	// PID namespace.
	TID, TGID int32
	// StartNanoseconds is the task's start time in nanoseconds since boot
	// (task_struct.start_boottime).
	StartNanoseconds uint64
	// CgroupID is the id of the task's cgroup in the walked hierarchy:
	// the inode number of its directory. Ancestors are its ancestors'
	// ids, nearest first, zero past the root.
	CgroupID  uint64
	Ancestors [container.MaxExitAncestors]uint64
	// Final holds the task's counters at its last switch away.
	Final schedstat.Stat
}

// StartTime returns the start time in clock ticks since boot, as field 22
// of /proc/<tid>/stat shows it and container.Exit expects it.
func (r record) StartTime() uint64 {
	return schedstat.StartTicks(r.StartNanoseconds)
}

// parseRecord decodes a record written by the program. It reports false if
// b is too short.
func parseRecord(b []byte) (record, bool) {
	if len(b) < recordSize {
		return record{}, false
	}
	ne := binary.NativeEndian
	r := record{
		TID:              int32(ne.Uint32(b[recTID:])),
		TGID:             int32(ne.Uint32(b[recTGID:])),
		StartNanoseconds: ne.Uint64(b[recStart:]),
		CgroupID:         ne.Uint64(b[recCgroup:]),
		Final: schedstat.Stat{
			RunNanoseconds:  ne.Uint64(b[recRun:]),
			WaitNanoseconds: ne.Uint64(b[recWait:]),
			Timeslices:      ne.Uint64(b[recSlices:]),
		},
	}
	for i := range r.Ancestors {
		r.Ancestors[i] = ne.Uint64(b[recAncestors+8*i:])
	}
	return r, true
}

// exit returns the record as the accounting takes it.
func (r record) exit() container.Exit {
	return container.Exit{TID: r.TID, StartTime: r.StartTime(), Final: r.Final, Cgroup: r.CgroupID, Ancestors: r.Ancestors}
}
