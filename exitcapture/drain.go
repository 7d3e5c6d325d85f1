package exitcapture

import (
	"errors"
	"time"

	"github.com/schedstatd/schedstatd/container"
)

// Drain hands every record received so far to fn, in the order the kernel
// wrote them, and returns how many. It does not block on the kernel. Call
// it from one goroutine at a time: the one that owns the table fn feeds.
// A nil Source drains nothing.
func (s *Source) Drain(fn func(container.Exit)) int {
	n, _ := s.drain(fn)
	return n
}

// drain is Drain that also returns the monotonic clock up to which every
// record the kernel wrote has been handed to fn.
func (s *Source) drain(fn func(container.Exit)) (int, int64) {
	if s == nil {
		return 0, 0
	}
	s.mu.Lock()
	s.queue, s.spare = s.spare[:0], s.queue
	upTo := s.upTo
	s.mu.Unlock()
	for _, x := range s.spare {
		fn(x)
	}
	return len(s.spare), upTo
}

// FreeRecordDelay is how much later a record may come at sched_process_free
// than at the final switch: the RCU callback that frees the task, which a
// kernel with lazy RCU holds up to 10 s.
const FreeRecordDelay = 10 * time.Second

// Feed is the hook to run right before each pass of t, starting before the
// first: it prepares t for exit records (Table.TrackExits), drains every
// record received so far into Table.Exit, and tells t how far the records
// are complete (Table.ExitsDelivered). It must be called from the
// goroutine that owns t. A nil Source does nothing.
func (s *Source) Feed(t *container.Table) {
	if s == nil {
		return
	}
	t.TrackExits()
	if s.hook == HookFree {
		t.ExitRecordDelay(FreeRecordDelay)
	}
	s.drainMoves(t.Migrate)
	_, upTo := s.drain(t.Exit)
	t.ExitsDelivered(upTo)
}

// Stats are a Source's running counts. They only grow.
type Stats struct {
	// Events counts records received from the kernel.
	Events uint64
	// Lost counts exits whose record was lost: the kernel's ring buffer
	// was full, or the queue between two drains was.
	Lost uint64
	// Migrations counts move records received; MigrationsLost those the
	// queue between two drains had no room for (the ring's losses are
	// in Lost).
	Migrations, MigrationsLost uint64
}

// Stats returns the counts now. It may be called from any goroutine; a nil
// Source has none.
func (s *Source) Stats() Stats {
	if s == nil {
		return Stats{}
	}
	return Stats{
		Events: s.events.Load(),
		Lost:   s.dropped.Load() + s.kernelLost(),

		Migrations:     s.moveEvents.Load(),
		MigrationsLost: s.droppedMoves.Load(),
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
		errs := []error{s.link.Close()}
		if s.moveLink != nil {
			errs = append(errs, s.moveLink.Close())
		}
		errs = append(errs, s.reader.Close())
		<-s.done
		s.kernelLost()
		s.lostMu.Lock()
		s.lostMap = nil
		s.lostMu.Unlock()
		if s.moveColl != nil {
			s.moveColl.Close()
		}
		s.coll.Close()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
