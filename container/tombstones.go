package container

import "github.com/schedstatd/schedstatd/schedstat"

// Tombstones remember, for a while, what the series of a removed cgroup's
// path showed last, so that a cgroup made again under that path later
// continues the series instead of starting it over from zero (which
// Prometheus would read as a counter reset and add whole).
const (
	// tombstoneTTL is how long, in nanoseconds of the pass clock, a
	// removed path is remembered: beyond Prometheus's five-minute lookback.
	tombstoneTTL = int64(15 * 60 * 1e9)
	// maxTombstones bounds the paths remembered; the oldest go first.
	maxTombstones = 16384
)

// tombstone is the last exported state of a removed path.
type tombstone struct {
	stat schedstat.Stat
	// kernel holds the kernel counters as shown: an inheritor adds
	// their values to its bases.
	kernel kernelCounters
	at     int64 // pass clock when the path was removed
}

// tombstones is a map of removed paths and the order they were removed in.
type tombstones struct {
	byPath map[string]tombstone
	queue  []tombEntry // oldest first; entries may be stale
	head   int
}

type tombEntry struct {
	path string
	at   int64
}

func (t *tombstones) put(path string, ts tombstone, now int64) {
	if t.byPath == nil {
		t.byPath = make(map[string]tombstone)
	}
	ts.at = now
	t.byPath[path] = ts
	t.queue = append(t.queue, tombEntry{path, now})
	if n := len(t.queue) - t.head; n > 4*maxTombstones && n > 4*len(t.byPath) {
		// A path removed and made again many times leaves stale entries
		// behind: keep only the live ones.
		q := t.queue[:0]
		for _, e := range t.queue[t.head:] {
			if ts, ok := t.byPath[e.path]; ok && ts.at == e.at {
				q = append(q, e)
			}
		}
		clear(t.queue[len(q):])
		t.queue, t.head = q, 0
	}
}

// take returns and forgets the tombstone of path.
func (t *tombstones) take(path string) (tombstone, bool) {
	ts, ok := t.byPath[path]
	if ok {
		delete(t.byPath, path)
	}
	return ts, ok
}

// expire forgets tombstones older than tombstoneTTL, and the oldest beyond
// maxTombstones.
func (t *tombstones) expire(now int64) {
	for t.head < len(t.queue) {
		e := t.queue[t.head]
		ts, ok := t.byPath[e.path]
		live := ok && ts.at == e.at
		if live && now-e.at < tombstoneTTL && len(t.byPath) <= maxTombstones {
			break
		}
		if live {
			delete(t.byPath, e.path)
		}
		t.queue[t.head] = tombEntry{}
		t.head++
	}
	if t.head == len(t.queue) {
		t.queue, t.head = t.queue[:0], 0
	} else if t.head > len(t.queue)/2 && t.head > 64 {
		t.queue = append(t.queue[:0], t.queue[t.head:]...)
		t.head = 0
	}
	if len(t.byPath) == 0 && t.byPath != nil && len(t.queue) == 0 {
		t.byPath = nil // give a burst's buckets back
	}
}
