package exitcapture

import (
	"encoding/binary"
	"errors"
	"os"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// read moves records from the ring buffer to the queue until Close. It
// reads whatever the ring holds every poll interval, or sooner when the
// kernel wakes it. Each time it finds the ring empty it notes the time:
// every record written before then has been queued.
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
			now := monotonicNow()
			s.mu.Lock()
			s.upTo = now
			s.mu.Unlock()
			s.reader.SetDeadline(time.Now().Add(s.poll))
		default:
			// Closed, or broken: either way no more records come; the
			// kernel counts what it cannot write as lost.
			return
		}
	}
}

// receive queues one raw record, or counts it lost if the queue is full.
func (s *Source) receive(raw []byte) {
	r, ok := parseRecord(raw)
	if !ok {
		return
	}
	if len(raw) >= moveRecordSize && binary.NativeEndian.Uint64(raw[recordSize:]) == recordKindMove {
		s.moveEvents.Add(1)
		s.mu.Lock()
		if len(s.moves) < s.max {
			s.moves = append(s.moves, r.migration())
		} else {
			s.droppedMoves.Add(1)
		}
		s.mu.Unlock()
		return
	}
	s.events.Add(1)
	s.mu.Lock()
	if len(s.queue) < s.max {
		s.queue = append(s.queue, r.exit())
	} else {
		s.dropped.Add(1)
	}
	s.mu.Unlock()
}

// monotonicNow reads CLOCK_MONOTONIC, the clock bpf_ktime_get_ns and the
// table's retirements use.
func monotonicNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
