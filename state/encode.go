package state

import (
	"encoding/binary"
	"hash/crc32"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedlat"
	"github.com/schedstatd/schedstatd/schedstat"
)

// File is the content of a state file.
type File struct {
	Origin Origin
	// Written is when the file was written.
	Written time.Time
	// Table is the task table's state.
	Table container.State
	// Latency is what the runqueue latency histograms and preemption
	// counts served (from version 3); no Totals if they are off.
	Latency schedlat.Kept
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// cgroup flags.
const (
	flagHoldsPath = 1 << iota
	flagUnused
	flagRelative // the path is the parent's path, a slash and this name
)

// Append appends f's encoding to b and returns it.
func Append(b []byte, f *File) []byte {
	start := len(b)
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint16(b, Version)
	b = append(b, 0, 0, 0, 0, 0, 0) // reserved, then the body length
	body := len(b)
	b = appendString(b, f.Origin.BootID)
	b = appendString(b, f.Origin.Hierarchy)
	b = appendString(b, f.Origin.Dir)
	b = binary.AppendUvarint(b, f.Origin.RootInode)
	b = binary.AppendVarint(b, f.Written.UnixNano())

	t := &f.Table
	b = binary.AppendUvarint(b, container.NumKernelCounters)
	b = binary.AppendUvarint(b, uint64(len(t.Cgroups)))
	for i := range t.Cgroups {
		c := &t.Cgroups[i]
		var flags byte
		if c.HoldsPath {
			flags |= flagHoldsPath
		}
		path := c.Path
		if c.Parent >= 0 && c.Parent < i {
			if name, ok := childName(t.Cgroups[c.Parent].Path, path); ok {
				flags |= flagRelative
				path = name
			}
		}
		b = binary.AppendUvarint(b, c.ID)
		b = binary.AppendUvarint(b, uint64(c.Parent+1))
		b = append(b, flags)
		b = appendString(b, path)
		b = appendStat(b, c.Own)
		b = appendStat(b, c.Base)
		b = appendKernel(b, &c.Kernel)
	}
	b = appendTasks(b, t.Tasks)
	b = binary.AppendUvarint(b, uint64(len(t.Tombstones)))
	for i := range t.Tombstones {
		ts := &t.Tombstones[i]
		b = appendString(b, ts.Path)
		b = appendStat(b, ts.Stat)
		b = appendKernel(b, &ts.Kernel)
		b = binary.AppendVarint(b, ts.RemovedAt)
	}
	b = binary.AppendUvarint(b, t.Totals.Store)
	b = binary.AppendUvarint(b, uint64(len(t.Totals.Credited)))
	for _, c := range t.Totals.Credited {
		b = binary.AppendUvarint(b, c.ID)
		b = appendStat(b, c.Stat)
	}
	b = appendTasks(b, t.Retired)
	b = appendLatency(b, &f.Latency)
	b = appendLateRun(b, t.Cgroups)
	binary.LittleEndian.PutUint32(b[start+12:], uint32(len(b)-body))
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// appendTasks appends a count and each task: id, start time, cgroup
// index and what was credited for it.
func appendTasks(b []byte, tasks []container.TaskState) []byte {
	b = binary.AppendUvarint(b, uint64(len(tasks)))
	for i := range tasks {
		x := &tasks[i]
		b = binary.AppendUvarint(b, uint64(uint32(x.TID)))
		b = binary.AppendUvarint(b, x.StartTime)
		b = binary.AppendUvarint(b, uint64(x.Cgroup))
		b = appendStat(b, x.Last)
	}
	return b
}

// childName returns the last element of path if path is parent's child.
func childName(parent, path string) (string, bool) {
	prefix := parent + "/"
	if parent == "/" {
		prefix = "/"
	}
	name, ok := strings.CutPrefix(path, prefix)
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// appendLatency appends the number of cgroups with latency totals and, if
// any, since when they count, the number of histogram buckets, and each
// cgroup's path and counts, its buckets sparse (how many are not zero,
// then each one's index and count).
func appendLatency(b []byte, k *schedlat.Kept) []byte {
	b = binary.AppendUvarint(b, uint64(len(k.Totals)))
	if len(k.Totals) == 0 {
		return b
	}
	var since int64 // 0: not known
	if !k.Since.IsZero() {
		since = k.Since.UnixNano()
	}
	b = binary.AppendVarint(b, since)
	b = binary.AppendUvarint(b, schedlat.Buckets)
	for _, p := range slices.Sorted(maps.Keys(k.Totals)) {
		c := k.Totals[p]
		b = appendString(b, p)
		b = binary.AppendUvarint(b, c.Waits)
		b = binary.AppendUvarint(b, c.WaitNanoseconds)
		nz := 0
		for _, n := range c.Buckets {
			if n != 0 {
				nz++
			}
		}
		b = binary.AppendUvarint(b, uint64(nz))
		for i, n := range c.Buckets {
			if n != 0 {
				b = binary.AppendUvarint(b, uint64(i))
				b = binary.AppendUvarint(b, n)
			}
		}
		for _, n := range []uint64{c.Same, c.Other, c.Kernel, c.Idle, c.Caused} {
			b = binary.AppendUvarint(b, n)
		}
	}
	return b
}

// appendKernel appends a mask of the counters ever read, a mask of those
// not all zero, and the base and last reading of each of the latter.
func appendKernel(b []byte, k *[container.NumKernelCounters]container.KernelCounter) []byte {
	var has, set uint64
	for i, c := range k {
		if c.Has {
			has |= 1 << i
		}
		if c.Base != 0 || c.Last != 0 {
			set |= 1 << i
		}
	}
	b = binary.AppendUvarint(b, has)
	b = binary.AppendUvarint(b, set)
	for i, c := range k {
		if set&(1<<i) != 0 {
			b = binary.AppendUvarint(b, c.Base)
			b = binary.AppendUvarint(b, c.Last)
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStat(b []byte, s schedstat.Stat) []byte {
	b = binary.AppendUvarint(b, s.RunNanoseconds)
	b = binary.AppendUvarint(b, s.WaitNanoseconds)
	return binary.AppendUvarint(b, s.Timeslices)
}

// appendLateRun appends the cgroups' late run: their number, then the
// index and LateRun of each cgroup that has any.
func appendLateRun(b []byte, cgroups []container.CgroupState) []byte {
	n := 0
	for i := range cgroups {
		if cgroups[i].LateRun != 0 {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	for i := range cgroups {
		if late := cgroups[i].LateRun; late != 0 {
			b = binary.AppendUvarint(b, uint64(i))
			b = binary.AppendUvarint(b, late)
		}
	}
	return b
}
