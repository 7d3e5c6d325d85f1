package taskiter

import (
	"encoding/binary"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/schedstat"
)

// encode returns r as the program writes it.
func encode(r record) []byte {
	b := make([]byte, recordSize)
	ne := binary.NativeEndian
	ne.PutUint32(b[recTID:], uint32(r.tid))
	if r.zombie {
		ne.PutUint32(b[recExit:], 16) // EXIT_ZOMBIE
	}
	ne.PutUint64(b[recStart:], r.start)
	ne.PutUint64(b[recCgroup:], r.cgroup)
	ne.PutUint64(b[recRun:], r.stat.RunNanoseconds)
	ne.PutUint64(b[recWait:], r.stat.WaitNanoseconds)
	ne.PutUint64(b[recSlices:], r.stat.Timeslices)
	return b
}

func newTestSource() *Source { return &Source{index: make(map[int32]int32)} }

// feed replaces s's records with rs, as a read would.
func feed(s *Source, rs ...record) {
	var raw []byte
	for _, r := range rs {
		raw = append(raw, encode(r)...)
	}
	s.recs = s.recs[:0]
	clear(s.index)
	s.decode(raw)
}

func TestDecode(t *testing.T) {
	want := []record{
		{tid: 7, start: 1_230_000_000, cgroup: 1, stat: schedstat.Stat{RunNanoseconds: 5, WaitNanoseconds: 6, Timeslices: 7}},
		{tid: 9, zombie: true, start: 2_000_000_000, cgroup: 4242, stat: schedstat.Stat{RunNanoseconds: 1 << 40, WaitNanoseconds: 3, Timeslices: 1}},
	}
	s := newTestSource()
	// A record with id 0 (a task outside the namespace) is dropped.
	feed(s, want[0], record{tid: 0, start: 1}, want[1])
	if diff := cmp.Diff(want, s.recs, cmp.AllowUnexported(record{})); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	for _, w := range want {
		if r, ok := s.lookup(w.tid); !ok || *r != w {
			t.Errorf("lookup(%d) = %+v, %v", w.tid, r, ok)
		}
	}
	if _, ok := s.lookup(8); ok {
		t.Error("lookup(8) found a task no record names")
	}
}

// TestHandleIdentity checks that a handle reads only the task it was
// opened for: a record of its id with another start time is another task.
func TestHandleIdentity(t *testing.T) {
	s := newTestSource()
	old := record{tid: 5, start: 100 * nsPerTick, stat: schedstat.Stat{RunNanoseconds: 10}}
	feed(s, old)
	h, err := s.Opener().Open(5)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.StartTime(); got != 100 {
		t.Errorf("StartTime = %d ticks, want 100", got)
	}
	if st, err := h.Read(); err != nil || st != old.stat {
		t.Errorf("Read = %+v, %v; want %+v", st, err, old.stat)
	}
	feed(s, record{tid: 5, start: 100*nsPerTick + 1, stat: schedstat.Stat{RunNanoseconds: 1}})
	if _, err := h.Read(); !schedstat.IsGone(err) {
		t.Errorf("Read after the id was taken again: err %v, want one IsGone reports", err)
	}
	feed(s)
	if _, err := h.Read(); !schedstat.IsGone(err) {
		t.Errorf("Read after the task vanished: err %v, want one IsGone reports", err)
	}
	if _, err := s.Opener().Open(5); !schedstat.IsGone(err) {
		t.Errorf("Open of a missing task: err %v, want one IsGone reports", err)
	}
}

// TestIndexShrinks checks that the tid index and the records are rebuilt
// small after a burst of tasks.
func TestIndexShrinks(t *testing.T) {
	s := newTestSource()
	burst := make([]record, 10*minRebuild)
	for i := range burst {
		burst[i] = record{tid: int32(i + 1), start: 1}
	}
	feed(s, burst...)
	s.trim(len(burst) * recordSize)
	feed(s, burst[:10]...)
	s.trim(10 * recordSize)
	if s.peak > 10 || cap(s.recs) > 10+minRebuild {
		t.Errorf("after the burst: index peak %d, records capacity %d", s.peak, cap(s.recs))
	}
	for _, r := range burst[:10] {
		if _, ok := s.lookup(r.tid); !ok {
			t.Errorf("lookup(%d) failed after the rebuild", r.tid)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(encode(record{tid: 1, start: 2, cgroup: 3, stat: schedstat.Stat{RunNanoseconds: 4, WaitNanoseconds: 5, Timeslices: 6}}))
	f.Add(append(encode(record{tid: 3}), encode(record{tid: 3, zombie: true})...))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := newTestSource()
		s.decode(b[:len(b)/recordSize*recordSize])
		for tid, i := range s.index {
			if tid <= 0 || s.recs[i].tid != tid {
				t.Fatalf("index %d -> record %+v", tid, s.recs[i])
			}
		}
	})
}

// nsPerTick is a clock tick (1/USER_HZ) in nanoseconds.
const nsPerTick = 1e9 / schedstat.UserHZ
