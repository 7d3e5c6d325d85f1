package schedlat

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/container"
)

// fakeCounts is a program's map: counts by cgroup id.
type fakeCounts struct {
	m         map[uint64]Counts
	forgotten []uint64
}

func (f *fakeCounts) Read() (map[uint64]Counts, error) {
	out := make(map[uint64]Counts, len(f.m))
	for k, v := range f.m {
		out[k] = v
	}
	return out, nil
}

func (f *fakeCounts) Forget(ids []uint64) {
	for _, id := range ids {
		delete(f.m, id)
		f.forgotten = append(f.forgotten, id)
	}
}

func (f *fakeCounts) Latency() bool    { return true }
func (f *fakeCounts) Preemption() bool { return true }
func (f *fakeCounts) Since() time.Time { return time.Time{} }

func waits(n uint64) Counts { return Counts{Waits: n, WaitNanoseconds: 1000 * n, Other: n} }

// passes numbers the snapshots snap makes, one pass each.
var passes uint64

func snap(cgs ...container.CgroupStats) *container.Snapshot {
	passes++
	return &container.Snapshot{Cgroups: cgs, Counters: container.Counters{Passes: passes}}
}

func cg(path string, id uint64) container.CgroupStats {
	return container.CgroupStats{Path: path, ID: id}
}

// checkWaits fails t unless r's totals for s have the waits want, by
// path, each made by waits.
func checkWaits(t *testing.T, r *Rollup, s *container.Snapshot, want map[string]uint64) {
	t.Helper()
	tot, err := r.Totals(s)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for p, c := range tot {
		got[p] = c.Waits
		if c.WaitNanoseconds != 1000*c.Waits || c.Other != c.Waits {
			t.Errorf("%s: counts %+v do not add up", p, c)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
}

// TestRollup checks that a cgroup's counts include its descendants', and
// that no total falls when a cgroup is removed, made again under the same
// name, or made and removed between two passes.
func TestRollup(t *testing.T) {
	f := &fakeCounts{m: map[uint64]Counts{1: waits(1), 10: waits(10), 11: waits(100)}}
	r := NewRollup(f)
	tree := snap(cg("/", 1), cg("/a", 10), cg("/a/b", 11))
	check := func(s *container.Snapshot, want map[string]uint64) {
		t.Helper()
		checkWaits(t, r, s, want)
	}
	check(tree, map[string]uint64{"/": 111, "/a": 110, "/a/b": 100})

	// /a/b ran more, then was removed: its counts stay in /a and /.
	f.m[11] = waits(150)
	check(snap(cg("/", 1), cg("/a", 10)), map[string]uint64{"/": 161, "/a": 160})
	if diff := cmp.Diff([]uint64{11}, f.forgotten); diff != "" {
		t.Errorf("forgotten (-want +got):\n%s", diff)
	}
	// A zombie's last switch after the removal still lands there.
	f.m[11] = waits(1)
	check(snap(cg("/", 1), cg("/a", 10)), map[string]uint64{"/": 162, "/a": 161})

	// /a/b made again (a new id): its series goes on from the old one's.
	f.m[12] = waits(5)
	check(snap(cg("/", 1), cg("/a", 10), cg("/a/b", 12)), map[string]uint64{"/": 167, "/a": 166, "/a/b": 156})

	// /a removed with its child: all of it stays in /, also once the
	// paths are forgotten.
	for range goneRounds + 2 {
		check(snap(cg("/", 1)), map[string]uint64{"/": 167})
	}
	if len(r.retired) != 1 {
		t.Errorf("retired paths %v, want the root's only", r.retired)
	}

	// A cgroup no pass lists waits a few passes, then goes to the root;
	// scrapes that share a pass count once.
	f.m[99] = waits(1000)
	for range unlistedRounds {
		s := snap(cg("/", 1))
		check(s, map[string]uint64{"/": 167})
		check(s, map[string]uint64{"/": 167})
	}
	check(snap(cg("/", 1)), map[string]uint64{"/": 1167})
	if r.Unattributed() != 1 {
		t.Errorf("unattributed %d, want 1", r.Unattributed())
	}
}

// TestRollupServesOneReadAPass: every caller of a pass, or of an earlier
// one, gets the totals of the pass's read, however much was counted
// since; a later pass reads again. What the state file keeps of a pass is
// then what its scrapes serve.
func TestRollupServesOneReadAPass(t *testing.T) {
	f := &fakeCounts{m: map[uint64]Counts{1: waits(1)}}
	r := NewRollup(f)
	older, s := snap(cg("/", 1)), snap(cg("/", 1))
	waitsAt := func(s *container.Snapshot) uint64 {
		t.Helper()
		tot, err := r.Totals(s)
		if err != nil {
			t.Fatal(err)
		}
		return tot["/"].Waits
	}
	if got := waitsAt(s); got != 1 {
		t.Fatalf("first read: %d waits, want 1", got)
	}
	f.m[1] = waits(5)
	if k, ok := r.Keep(s); !ok || k.Totals["/"].Waits != 1 {
		t.Errorf("kept %+v (%v) of the read pass, want its 1 wait", k, ok)
	}
	if a, b := waitsAt(s), waitsAt(older); a != 1 || b != 1 {
		t.Errorf("the read pass again: %d waits, an earlier one %d; want the read's 1", a, b)
	}
	if got := waitsAt(snap(cg("/", 1))); got != 5 {
		t.Errorf("the next pass: %d waits, want 5", got)
	}
}

// TestRollupRestore: totals go on from what an earlier daemon kept, path
// by path, since its start; a kept path gone from the tree goes on if it
// is made again within goneRounds passes and starts afresh after.
func TestRollupRestore(t *testing.T) {
	f := &fakeCounts{m: map[uint64]Counts{1: waits(1), 10: waits(10)}}
	r := NewRollup(f)
	since := time.Unix(1764570000, 0)
	r.Restore(Kept{Since: since, Totals: map[string]Counts{"/": waits(500), "/a": waits(300), "/gone": waits(200)}})
	if !r.Since().Equal(since) {
		t.Errorf("since %v, want the kept %v", r.Since(), since)
	}
	check := func(s *container.Snapshot, want map[string]uint64) {
		t.Helper()
		checkWaits(t, r, s, want)
	}
	tree := func(more ...container.CgroupStats) *container.Snapshot {
		return snap(append([]container.CgroupStats{cg("/", 1), cg("/a", 10)}, more...)...)
	}
	check(tree(), map[string]uint64{"/": 511, "/a": 310})
	f.m[30] = waits(1)
	check(tree(cg("/gone", 30)), map[string]uint64{"/": 512, "/a": 310, "/gone": 201})
	// Removed again, for longer than a path is remembered: its counts
	// stay in the root, and a cgroup made under its name starts afresh.
	for range goneRounds + 2 {
		check(tree(), map[string]uint64{"/": 512, "/a": 310})
	}
	f.m[31] = waits(1)
	check(tree(cg("/gone", 31)), map[string]uint64{"/": 513, "/a": 310, "/gone": 1})
}
