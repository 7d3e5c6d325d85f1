package schedlat

import (
	"errors"
	"fmt"
	"io"
)

// Counts are one cgroup's counts: its waits and their histogram, and its
// tasks' switches away while still runnable, by who ran next. They only
// grow.
type Counts struct {
	// Waits is the number of waits (one per timeslice), WaitNanoseconds
	// their total, and Buckets their histogram (see Schema).
	Waits, WaitNanoseconds uint64
	Buckets                [Buckets]uint64
	// Same, Other, Kernel and Idle count preemptions of the cgroup's
	// tasks by a task of the same cgroup, of another cgroup, a kernel
	// thread, or the idle task; Caused the preemptions its tasks caused
	// in other cgroups.
	Same, Other, Kernel, Idle, Caused uint64
}

// Preemptions returns the total of the cgroup's tasks' preemptions.
func (c *Counts) Preemptions() uint64 { return c.Same + c.Other + c.Kernel + c.Idle }

// Add adds o to c.
func (c *Counts) Add(o *Counts) {
	c.Waits += o.Waits
	c.WaitNanoseconds += o.WaitNanoseconds
	for i := range c.Buckets {
		c.Buckets[i] += o.Buckets[i]
	}
	c.Same += o.Same
	c.Other += o.Other
	c.Kernel += o.Kernel
	c.Idle += o.Idle
	c.Caused += o.Caused
}

// add adds one CPU's value to c.
func (c *Counts) add(v *cpuValue) {
	c.Waits += v[slotCount]
	c.WaitNanoseconds += v[slotSum]
	for i := range c.Buckets {
		c.Buckets[i] += v[slotBuckets+i]
	}
	c.Same += v[slotSame]
	c.Other += v[slotOther]
	c.Kernel += v[slotKernel]
	c.Idle += v[slotIdle]
	c.Caused += v[slotCaused]
}

// Pair is a cgroup whose task was preempted (Victim) and the cgroup of
// the task that ran next (Preemptor, 0 for a kernel thread), by the ids of
// the cgroups in the walked hierarchy.
type Pair struct {
	Victim, Preemptor uint64
}

// Lost counts what the program could not count, for want of room.
type Lost struct {
	// Cgroups counts switches of a cgroup, and flushes of a task's
	// buffered counts (which the task keeps for the next), that found
	// the stats map full; Pairs preemptions whose pair found the pair
	// map full; Tasks switches for which the kernel gave no task storage
	// (their waits count at the task's next switch that finds it).
	Cgroups, Pairs, Tasks uint64
}

// ErrClosed is returned by reads of a closed Source.
var ErrClosed = errors.New("schedlat: source closed")

// Read returns every cgroup's counts, by cgroup id, summed over CPUs,
// after flushing what tasks buffered: every wait and preemption counted
// up to the read is in them but those of tasks switching away on another
// CPU at that moment.
func (s *Source) Read() (map[uint64]Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if err := s.flushTasks(); err != nil {
		return nil, err
	}
	out := make(map[uint64]Counts)
	var id uint64
	it := s.stats.Iterate()
	for it.Next(&id, &s.cpuBuf) {
		var c Counts
		for i := range s.cpuBuf {
			c.add(&s.cpuBuf[i])
		}
		out[id] = c
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("schedlat: read the stats: %w", err)
	}
	return out, nil
}

// flushTasks runs the flush iterator over every task, which adds what each
// task's storage buffered to the stats of its cgroup.
func (s *Source) flushTasks() error {
	if s.flush == nil {
		return nil
	}
	r, err := s.flush.Open()
	if err != nil {
		return fmt.Errorf("schedlat: flush the tasks' counts: %w", err)
	}
	defer r.Close()
	if _, err := io.Copy(io.Discard, r); err != nil {
		return fmt.Errorf("schedlat: flush the tasks' counts: %w", err)
	}
	return nil
}

// Forget deletes the counts of cgroups that are gone, so the map does not
// fill; the caller keeps what they had.
func (s *Source) Forget(ids []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for _, id := range ids {
		_ = s.stats.Delete(id)
	}
}

// Pairs returns the count of every (victim, preemptor) pair the program
// keeps; nil without preemption.
func (s *Source) Pairs() (map[Pair]uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.pairs == nil {
		return nil, nil
	}
	out := make(map[Pair]uint64)
	var k Pair
	var v uint64
	it := s.pairs.Iterate()
	for it.Next(&k, &v) {
		out[k] = v
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("schedlat: read the pairs: %w", err)
	}
	return out, nil
}

// forgetPairs deletes pairs, so that the map keeps room for those active.
func (s *Source) forgetPairs(pairs []Pair) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.pairs == nil {
		return
	}
	for _, p := range pairs {
		_ = s.pairs.Delete(p)
	}
}

// Lost returns what the program could not count.
func (s *Source) Lost() Lost {
	if s == nil {
		return Lost{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Lost{}
	}
	get := func(slot uint32) uint64 {
		var per []uint64
		if err := s.lost.Lookup(slot, &per); err != nil {
			return 0
		}
		var n uint64
		for _, v := range per {
			n += v
		}
		return n
	}
	return Lost{Cgroups: get(lostStats), Pairs: get(lostPairs), Tasks: get(lostTasks)}
}
