package exitcapture

import (
	"encoding/binary"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedstat"
)

// offline returns a Source with no kernel objects, whose queue tests fill
// through receive, as the reader goroutine does.
func offline(max int) *Source { return &Source{max: max} }

// raw encodes a record as the program writes it, with ancestors.
func raw(tid int32, startNs, cgroup, run uint64, ancestors ...uint64) []byte {
	b := make([]byte, recordSize)
	ne := binary.NativeEndian
	ne.PutUint32(b[recTID:], uint32(tid))
	ne.PutUint32(b[recTGID:], uint32(tid))
	ne.PutUint64(b[recStart:], startNs)
	ne.PutUint64(b[recCgroup:], cgroup)
	ne.PutUint64(b[recRun:], run)
	ne.PutUint64(b[recSlices:], 1)
	for i, a := range ancestors {
		ne.PutUint64(b[recAncestors+8*i:], a)
	}
	return b
}

// TestQueueBound: the queue holds at most max records between two drains;
// the rest are counted lost, and Drain hands over the rest in order.
func TestQueueBound(t *testing.T) {
	s := offline(3)
	const cgroup, parent, root = 30, 20, 1
	for tid := int32(1); tid <= 5; tid++ {
		s.receive(raw(tid, 2e9, cgroup, uint64(tid)*100, parent, root))
	}
	s.receive([]byte{1, 2, 3}) // short: ignored
	var got []container.Exit
	if n := s.Drain(func(x container.Exit) { got = append(got, x) }); n != 3 {
		t.Errorf("Drain = %d, want 3", n)
	}
	var want []container.Exit
	for tid := int32(1); tid <= 3; tid++ {
		want = append(want, container.Exit{TID: tid, StartTime: 200, Cgroup: cgroup,
			Ancestors: [container.MaxExitAncestors]uint64{parent, root},
			Final:     schedstat.Stat{RunNanoseconds: uint64(tid) * 100, Timeslices: 1}})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if st := s.dropped.Load(); st != 2 || s.events.Load() != 5 {
		t.Errorf("events %d lost %d, want 5 and 2", s.events.Load(), st)
	}
	if n := s.Drain(func(container.Exit) {}); n != 0 {
		t.Errorf("second Drain = %d, want 0", n)
	}
	s.receive(raw(9, 0, root, 1))
	if n := s.Drain(func(container.Exit) {}); n != 1 {
		t.Errorf("Drain after a drain = %d, want 1", n)
	}
}

// TestNilSource: with capture off, the hook and the metrics still work.
func TestNilSource(t *testing.T) {
	var s *Source
	s.Feed(nil)
	if s.Drain(nil) != 0 || s.Stats() != (Stats{}) || s.Close() != nil {
		t.Error("a nil Source did something")
	}
}
