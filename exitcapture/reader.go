package exitcapture

import (
	"errors"
	"os"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"github.com/schedstatd/schedstatd/container"
)

// read moves records from the ring buffer to the queue until Close. It
// reads whatever the ring holds every poll interval, or sooner when the
// kernel wakes it.
func (s *Source) read() {
	defer close(s.done)
	var rec ringbuf.Record
	s.reader.SetDeadline(time.Now().Add(s.poll))
	for {
		err := s.reader.ReadInto(&rec)
		switch {
		case err == nil:
			s.receive(rec.RawSample)
		case errors.Is(err, os.ErrDeadlineExceeded):
			s.settle()
			s.reader.SetDeadline(time.Now().Add(s.poll))
		default:
			// Closed, or broken: either way no more records come; the
			// kernel counts what it cannot write as lost.
			return
		}
	}
}

// receive queues one raw record, or counts it lost if the queue is full.
// A record whose cgroup is new waits for the next walk of the hierarchy.
func (s *Source) receive(raw []byte) {
	s.settle()
	r, ok := parseRecord(raw)
	if !ok {
		return
	}
	s.events.Add(1)
	x := container.Exit{TID: r.TID, StartTime: r.StartTime(), Final: r.Final}
	if x.Cgroup, ok = s.cgroups.path(r.CgroupID); ok {
		s.enqueue(x)
	} else if len(s.waiting) < s.max {
		s.waiting = append(s.waiting, waiter{x, r.CgroupID})
	} else {
		s.dropped.Add(1)
	}
}

// waiter is a record held until the next walk finds its cgroup.
type waiter struct {
	x  container.Exit
	id uint64
}

// settle walks the hierarchy, if records wait for it and it is due, and
// queues those records.
func (s *Source) settle() {
	if len(s.waiting) == 0 || !s.cgroups.due() {
		return
	}
	s.cgroups.scan()
	for _, w := range s.waiting {
		w.x.Cgroup = s.cgroups.settle(w.id)
		s.enqueue(w.x)
	}
	clear(s.waiting)
	s.waiting = s.waiting[:0]
}

func (s *Source) enqueue(x container.Exit) {
	s.mu.Lock()
	if len(s.queue) < s.max {
		s.queue = append(s.queue, x)
	} else {
		s.dropped.Add(1)
	}
	s.mu.Unlock()
}
