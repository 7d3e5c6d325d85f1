package state

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedlat"
	"github.com/schedstatd/schedstatd/schedstat"
)

// Minimum encoded sizes, which bound the counts a body can claim.
const (
	minCgroup    = 13 // id, parent, flags, path length, 6 stats, 2 masks
	minTask      = 6
	minTombstone = 7
	minCredited  = 4 // id, 3 stats
	minLatency   = 9 // path length, waits, wait, buckets set, 5 preemption counts
	minLateRun   = 2 // index, run
)

// Decode parses a state file whole. A file that is not a state file, is of
// a newer version, is shorter or longer than its header says, fails its
// checksum, or holds anything that does not describe a task table is an
// error wrapping ErrNotState, ErrNewer, ErrTruncated or ErrCorrupt; no
// part of such a file is returned.
func Decode(b []byte) (*File, error) {
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrCorrupt, len(b), MaxFileSize)
	}
	if len(b) < len(Magic) {
		if string(b) == Magic[:len(b)] {
			return nil, fmt.Errorf("%w: %d bytes", ErrTruncated, len(b))
		}
		return nil, ErrNotState
	}
	if string(b[:len(Magic)]) != Magic {
		return nil, ErrNotState
	}
	if len(b) < headerSize {
		return nil, fmt.Errorf("%w: %d bytes, header is %d", ErrTruncated, len(b), headerSize)
	}
	v := binary.LittleEndian.Uint16(b[8:])
	switch {
	case v > Version:
		return nil, fmt.Errorf("%w: version %d, this daemon reads %d", ErrNewer, v, Version)
	case v == 0:
		return nil, fmt.Errorf("%w: version 0", ErrCorrupt)
	}
	if b[10] != 0 || b[11] != 0 {
		return nil, fmt.Errorf("%w: reserved header bytes set", ErrCorrupt)
	}
	n := uint64(binary.LittleEndian.Uint32(b[12:]))
	want := headerSize + n + crcSize
	switch {
	case uint64(len(b)) < want:
		return nil, fmt.Errorf("%w: %d bytes, header says %d", ErrTruncated, len(b), want)
	case uint64(len(b)) > want:
		return nil, fmt.Errorf("%w: %d bytes after the checksum", ErrCorrupt, uint64(len(b))-want)
	}
	end := headerSize + int(n)
	if sum, got := crc32.Checksum(b[:end], castagnoli), binary.LittleEndian.Uint32(b[end:]); sum != got {
		return nil, fmt.Errorf("%w: checksum %08x, computed %08x", ErrCorrupt, got, sum)
	}
	d := decoder{b: b[headerSize:end], version: v}
	f := d.file()
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d bytes after the last section", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	if err := f.Table.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return f, nil
}

// decoder reads a body; the first failure sticks and every later read
// returns zero.
type decoder struct {
	b       []byte
	err     error
	version uint16
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail("body ends early")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("string of %d bytes, %d left", n, len(d.b))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) stat() schedstat.Stat {
	return schedstat.Stat{RunNanoseconds: d.uvarint(), WaitNanoseconds: d.uvarint(), Timeslices: d.uvarint()}
}

// count reads a count of entries of at least min bytes each.
func (d *decoder) count(what string, min int) int {
	n := d.uvarint()
	if n > uint64(len(d.b)/min) {
		d.fail("%d %s in %d bytes", n, what, len(d.b))
		return 0
	}
	return int(n)
}

// kernel reads the counters appendKernel wrote, nk of them; counters the
// file does not have (an older daemon kept fewer) start unread.
func (d *decoder) kernel(k *[container.NumKernelCounters]container.KernelCounter, nk uint64) {
	has, set := d.uvarint(), d.uvarint()
	if (has|set)>>nk != 0 {
		d.fail("kernel counter masks %#x, %#x for %d counters", has, set, nk)
		return
	}
	for i := range nk {
		k[i].Has = has&(1<<i) != 0
		if set&(1<<i) != 0 {
			k[i].Base, k[i].Last = d.uvarint(), d.uvarint()
		}
	}
}

func (d *decoder) file() *File {
	f := &File{}
	f.Origin.BootID = d.string()
	f.Origin.Hierarchy = d.string()
	f.Origin.Dir = d.string()
	f.Origin.RootInode = d.uvarint()
	f.Written = time.Unix(0, d.varint())
	t := &f.Table
	nk := d.uvarint()
	if nk == 0 || nk > 64 {
		d.fail("%d kernel counters", nk)
	}
	if d.err == nil && nk > container.NumKernelCounters {
		// Counters this daemon does not know: a newer one wrote it.
		d.err = fmt.Errorf("%w: %d kernel counters per cgroup, this daemon keeps %d", ErrNewer, nk, container.NumKernelCounters)
		return f
	}
	t.Cgroups = make([]container.CgroupState, d.count("cgroups", minCgroup))
	for i := range t.Cgroups {
		c := &t.Cgroups[i]
		c.ID = d.uvarint()
		parent := d.uvarint()
		if parent > uint64(i) {
			d.fail("cgroup %d has parent %d", i, parent)
		}
		c.Parent = int(parent) - 1
		flags := d.byte()
		if flags&^(flagHoldsPath|flagRelative) != 0 {
			d.fail("cgroup %d has flags %#x", i, flags)
		}
		c.HoldsPath = flags&flagHoldsPath != 0
		c.Path = d.string()
		if flags&flagRelative != 0 && d.err == nil {
			if c.Parent < 0 {
				d.fail("root with a relative path")
			} else if p := t.Cgroups[c.Parent].Path; p == "/" {
				c.Path = "/" + c.Path
			} else {
				c.Path = p + "/" + c.Path
			}
		}
		c.Own, c.Base = d.stat(), d.stat()
		d.kernel(&c.Kernel, nk)
		if d.err != nil {
			return f
		}
	}
	if t.Tasks = d.tasks("tasks", len(t.Cgroups)); d.err != nil {
		return f
	}
	t.Tombstones = make([]container.TombstoneState, d.count("tombstones", minTombstone))
	for i := range t.Tombstones {
		ts := &t.Tombstones[i]
		ts.Path = d.string()
		ts.Stat = d.stat()
		d.kernel(&ts.Kernel, nk)
		ts.RemovedAt = d.varint()
	}
	if d.version < 2 || d.err != nil {
		return f
	}
	t.Totals.Store = d.uvarint()
	if n := d.count("credited totals", minCredited); n > 0 {
		t.Totals.Credited = make([]container.CreditedTotal, n)
		for i := range t.Totals.Credited {
			c := &t.Totals.Credited[i]
			c.ID = d.uvarint()
			c.Stat = d.stat()
		}
	}
	if r := d.tasks("retired tasks", len(t.Cgroups)); len(r) > 0 {
		t.Retired = r
	}
	if d.version >= 3 && d.err == nil {
		f.Latency = d.latency()
	}
	if d.version >= 4 && d.err == nil {
		d.lateRun(t.Cgroups)
	}
	return f
}

// lateRun reads what appendLateRun wrote into cgroups.
func (d *decoder) lateRun(cgroups []container.CgroupState) {
	for range d.count("cgroups with late run", minLateRun) {
		i, late := d.uvarint(), d.uvarint()
		switch {
		case d.err != nil:
			return
		case i >= uint64(len(cgroups)):
			d.fail("late run of cgroup %d of %d", i, len(cgroups))
			return
		case cgroups[i].LateRun != 0:
			d.fail("late run of cgroup %d given twice", i)
			return
		case late == 0 || late > cgroups[i].Own.RunNanoseconds:
			d.fail("late run %d of cgroup %d, which ran %d", late, i, cgroups[i].Own.RunNanoseconds)
			return
		}
		cgroups[i].LateRun = late
	}
}

// latency reads what appendLatency wrote. Another number of buckets is
// another histogram layout, which would take a new format version.
func (d *decoder) latency() schedlat.Kept {
	n := d.count("latency totals", minLatency)
	if n == 0 {
		return schedlat.Kept{}
	}
	k := schedlat.Kept{Totals: make(map[string]schedlat.Counts, n)}
	if since := d.varint(); since != 0 {
		k.Since = time.Unix(0, since)
	}
	if nb := d.uvarint(); nb != schedlat.Buckets && d.err == nil {
		d.fail("latency histograms of %d buckets, this daemon has %d", nb, schedlat.Buckets)
	}
	for range n {
		p := d.string()
		var c schedlat.Counts
		c.Waits, c.WaitNanoseconds = d.uvarint(), d.uvarint()
		nz := d.uvarint()
		if nz > schedlat.Buckets {
			d.fail("%s: %d latency buckets set of %d", p, nz, schedlat.Buckets)
		}
		for range nz {
			i := d.uvarint()
			if i >= schedlat.Buckets {
				d.fail("%s: latency bucket %d of %d", p, i, schedlat.Buckets)
				break
			}
			c.Buckets[i] = d.uvarint()
		}
		for _, v := range []*uint64{&c.Same, &c.Other, &c.Kernel, &c.Idle, &c.Caused} {
			*v = d.uvarint()
		}
		if _, dup := k.Totals[p]; dup && d.err == nil {
			d.fail("latency totals of %s twice", p)
		}
		if d.err != nil {
			return schedlat.Kept{}
		}
		k.Totals[p] = c
	}
	return k
}

// tasks reads the tasks appendTasks wrote, in cgroups of n.
func (d *decoder) tasks(what string, n int) []container.TaskState {
	tasks := make([]container.TaskState, d.count(what, minTask))
	for i := range tasks {
		x := &tasks[i]
		tid := d.uvarint()
		if tid > 1<<31-1 {
			d.fail("task id %d", tid)
		}
		x.TID = int32(tid)
		x.StartTime = d.uvarint()
		cg := d.uvarint()
		if cg >= uint64(n) {
			d.fail("task %d in cgroup %d of %d", tid, cg, n)
		}
		x.Cgroup = int(cg)
		x.Last = d.stat()
		if d.err != nil {
			return nil
		}
	}
	return tasks
}
