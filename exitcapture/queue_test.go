package exitcapture

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedstat"
)

// offline returns a Source with no kernel objects, whose queue tests fill
// through receive, as the reader goroutine does.
func offline(t testing.TB, max int) *Source {
	c, err := newCgroupIndex(t.TempDir(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &Source{max: max, cgroups: c}
}

// raw encodes a record as the program writes it.
func raw(tid int32, startNs, cgroup, run uint64) []byte {
	b := make([]byte, recordSize)
	ne := binary.NativeEndian
	ne.PutUint32(b[recTID:], uint32(tid))
	ne.PutUint32(b[recTGID:], uint32(tid))
	ne.PutUint64(b[recStart:], startNs)
	ne.PutUint64(b[recCgroup:], cgroup)
	ne.PutUint64(b[recRun:], run)
	ne.PutUint64(b[recSlices:], 1)
	return b
}

// TestQueueBound: the queue holds at most max records between two drains;
// the rest are counted lost, and Drain hands over the rest in order.
func TestQueueBound(t *testing.T) {
	s := offline(t, 3)
	root := inode(t, s.cgroups.root)
	for tid := int32(1); tid <= 5; tid++ {
		s.receive(raw(tid, 2e9, root, uint64(tid)*100))
	}
	s.receive([]byte{1, 2, 3}) // short: ignored
	var got []container.Exit
	if n := s.Drain(func(x container.Exit) { got = append(got, x) }); n != 3 {
		t.Errorf("Drain = %d, want 3", n)
	}
	var want []container.Exit
	for tid := int32(1); tid <= 3; tid++ {
		want = append(want, container.Exit{TID: tid, StartTime: 200, Cgroup: "/",
			Final: schedstat.Stat{RunNanoseconds: uint64(tid) * 100, Timeslices: 1}})
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

// TestNewCgroupWaits: a record of a cgroup made since the last walk waits,
// without blocking the reader, until a walk is due, and then goes to the
// queue with the cgroup's path; records of known cgroups pass it.
func TestNewCgroupWaits(t *testing.T) {
	s := offline(t, 10)
	now := time.Unix(1000, 0)
	s.cgroups.now = func() time.Time { return now }
	s.cgroups.interval = time.Second
	s.cgroups.scan()
	dir := filepath.Join(s.cgroups.root, "pod")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s.receive(raw(1, 0, inode(t, dir), 5))
	s.receive(raw(2, 0, inode(t, s.cgroups.root), 5))
	var got []string
	drain := func() {
		s.Drain(func(x container.Exit) { got = append(got, fmt.Sprintf("%d %s", x.TID, x.Cgroup)) })
	}
	drain()
	now = now.Add(time.Second)
	s.settle()
	drain()
	if diff := cmp.Diff([]string{"2 /", "1 /pod"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// One walk at the start, the test's own, and the one the record waited for.
	if n := s.cgroups.scans.Load(); n != 3 {
		t.Errorf("%d walks, want 3", n)
	}
}
