package exitcapture

import (
	"errors"

	"github.com/schedstatd/schedstatd/container"
)

// Drain hands every record received so far to fn, in the order the kernel
// wrote them, and returns how many. It does not block on the kernel. Call
// it from one goroutine at a time: the one that owns the table fn feeds.
// A nil Source drains nothing.
func (s *Source) Drain(fn func(container.Exit)) int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	s.queue, s.spare = s.spare[:0], s.queue
	s.mu.Unlock()
	for _, x := range s.spare {
		fn(x)
	}
	return len(s.spare)
}

// Feed is the hook to run right before each pass of t, starting before the
// first: it prepares t for exit records (Table.TrackExits) and drains
// every record received so far into Table.Exit. It must be called from
// the goroutine that owns t. A nil Source does nothing.
func (s *Source) Feed(t *container.Table) {
	if s == nil {
		return
	}
	t.TrackExits()
	s.Drain(t.Exit)
}

// Stats are a Source's running counts. They only grow.
type Stats struct {
	// Events counts records received from the kernel.
	Events uint64
	// Lost counts exits whose record was lost: the kernel's ring buffer
	// was full, or the queue between two drains was.
	Lost uint64
	// Unknown counts records whose cgroup id matched no directory of the
	// unified hierarchy, even after a fresh walk; they went to the root.
	Unknown uint64
	// Rescans counts walks of the unified hierarchy.
	Rescans uint64
}

// Stats returns the counts now. It may be called from any goroutine; a nil
// Source has none.
func (s *Source) Stats() Stats {
	if s == nil {
		return Stats{}
	}
	return Stats{
		Events:  s.events.Load(),
		Lost:    s.dropped.Load() + s.kernelLost(),
		Unknown: s.cgroups.unknown.Load(),
		Rescans: s.cgroups.scans.Load(),
	}
}

// kernelLost reads the program's count of records the ring had no room
// for; after Close, the count at Close.
func (s *Source) kernelLost() uint64 {
	s.lostMu.Lock()
	defer s.lostMu.Unlock()
	if s.lostMap != nil {
		var n uint64
		if err := s.lostMap.Lookup(uint32(0), &n); err == nil {
			s.lostFinal = n
		}
	}
	return s.lostFinal
}

// Close detaches the program, stops the reader and releases the kernel
// objects. Records already queued can still be drained; those still in
// the ring are dropped. Calling it again returns the first call's result;
// a nil Source closes nothing.
func (s *Source) Close() error {
	if s == nil {
		return nil
	}
	s.closeOnce.Do(func() {
		errs := []error{s.link.Close(), s.reader.Close()}
		<-s.done
		s.kernelLost()
		s.lostMu.Lock()
		s.lostMap = nil
		s.lostMu.Unlock()
		s.coll.Close()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
