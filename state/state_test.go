package state_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedlat"
	"github.com/schedstatd/schedstatd/schedstat"
	"github.com/schedstatd/schedstatd/state"
)

var origin = state.Origin{BootID: "6f1c7e5a-0d6b-4a4e-9f3e-2d2b1c0a9e11", Hierarchy: "cpuacct", Dir: "/sys/fs/cgroup/cpuacct", RootInode: 1}

func stat(run, wait, slices uint64) schedstat.Stat {
	return schedstat.Stat{RunNanoseconds: run, WaitNanoseconds: wait, Timeslices: slices}
}

// kernel returns kernel counters with the usage (base, last) and pressure
// some (base, last) set and read, and a throttling counter carried over
// from a predecessor but never read.
func kernel(usageBase, usage, someBase, some uint64) (k [container.NumKernelCounters]container.KernelCounter) {
	k[0] = container.KernelCounter{Base: usageBase, Last: usage, Has: true}
	k[6] = container.KernelCounter{Base: someBase, Last: some, Has: some != 0}
	k[3] = container.KernelCounter{Base: usageBase}
	return k
}

// sample is a file with every kind of entry: a root, a child whose path
// extends its parent's, a renamed one that does not, a removed cgroup
// sharing a path, tasks and tombstones.
func sample() *state.File {
	return &state.File{
		Origin:  origin,
		Written: time.Unix(1764578000, 123456789),
		Table: container.State{
			Cgroups: []container.CgroupState{
				{ID: 1, Parent: -1, Path: "/", HoldsPath: true, Own: stat(1e9, 2e8, 300), Kernel: kernel(0, 2e9, 0, 7e9)},
				{ID: 4026, Parent: 0, Path: "/kubepods", HoldsPath: true, Own: stat(5, 6, 7), Base: stat(1, 2, 3), LateRun: 3, Kernel: kernel(9, 10, 1, 2)},
				{ID: 4027, Parent: 1, Path: "/kubepods/pod1", HoldsPath: true},
				{ID: 4028, Parent: 1, Path: "/elsewhere/renamed", HoldsPath: true},
				{ID: 4029, Parent: 2, Path: "/kubepods/pod1/c"},
			},
			Tasks: []container.TaskState{
				{TID: 1, StartTime: 3, Last: stat(1, 2, 3), Cgroup: 0},
				{TID: 4194304, StartTime: 1 << 40, Last: stat(1<<63, 1<<62, 1<<61), Cgroup: 4},
			},
			// A retired task may share its id with a tracked one: another
			// start time, another task.
			Retired: []container.TaskState{
				{TID: 1, StartTime: 2, Last: stat(4, 5, 6), Cgroup: 3},
			},
			Tombstones: []container.TombstoneState{
				{Path: "/kubepods/gone", Stat: stat(8, 9, 10), Kernel: kernel(0, 11, 0, 0), RemovedAt: 12345},
			},
			Totals: container.TotalsState{Store: 41<<32 | 40, Credited: []container.CreditedTotal{
				{ID: 0, Stat: stat(1, 1, 1)}, {ID: 4026, Stat: stat(5, 6, 7)}, {ID: 9999, Stat: stat(1<<62, 3, 4)},
			}},
		},
		Latency: schedlat.Kept{Since: time.Unix(1764570000, 5), Totals: map[string]schedlat.Counts{
			"/":              latency(40, 2, 1),
			"/kubepods":      latency(30, 1, 1),
			"/kubepods/gone": latency(10, 1, 0), // removed: its path stays a while
			"/kubepods/pod1": {},
		}},
	}
}

// latency returns counts of waits in the first and last buckets, with
// same and caused preemptions.
func latency(waits, same, caused uint64) schedlat.Counts {
	c := schedlat.Counts{Waits: waits, WaitNanoseconds: 1 << 40 * waits, Same: same, Other: 1, Caused: caused}
	c.Buckets[0] = waits - waits/4
	c.Buckets[schedlat.Buckets-1] = waits / 4
	return c
}

// TestDecodeOlderVersions: a file of each earlier format, written by it
// (testdata/v<N>.state, the sample without what later formats added),
// loads whole: without totals, a table of totals restored from a version
// 1 file primes its source; without latency totals (before 3), those
// series start with the daemon; without late run (before 4), a restore
// fills from the counters as before.
func TestDecodeOlderVersions(t *testing.T) {
	for v, without := range map[uint16]func(*state.File){
		1: func(f *state.File) {
			f.Table.Totals, f.Table.Retired, f.Latency = container.TotalsState{}, nil, schedlat.Kept{}
			noLateRun(f)
		},
		2: func(f *state.File) { f.Latency = schedlat.Kept{}; noLateRun(f) },
		3: noLateRun,
	} {
		name := fmt.Sprintf("testdata/v%d.state", v)
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := binary.LittleEndian.Uint16(b[8:]); got != v {
			t.Fatalf("%s is of version %d", name, got)
		}
		got, err := state.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := sample()
		without(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s decoded (-want +got):\n%s", name, diff)
		}
	}
}

// noLateRun clears the late run of f's cgroups, which files before
// version 4 do not have.
func noLateRun(f *state.File) {
	for i := range f.Table.Cgroups {
		f.Table.Cgroups[i].LateRun = 0
	}
}

func TestRoundTrip(t *testing.T) {
	f := sample()
	got, err := state.Decode(state.Append(nil, f))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
}

// reseal fixes the body length and checksum of an edited file, so that
// only the edit is wrong.
func reseal(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[12:], uint32(len(b)-16-4))
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// badFiles are the files that must be refused whole, each with the error
// it must wrap.
func badFiles() map[string]struct {
	b    []byte
	want error
} {
	good := state.Append(nil, sample())
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	type bad = struct {
		b    []byte
		want error
	}
	m := map[string]bad{
		"empty":            {nil, state.ErrTruncated},
		"magic only":       {good[:5], state.ErrTruncated},
		"header cut":       {good[:12], state.ErrTruncated},
		"body cut":         {good[:len(good)/2], state.ErrTruncated},
		"checksum cut":     {good[:len(good)-1], state.ErrTruncated},
		"trailing bytes":   {append(append([]byte(nil), good...), 0), state.ErrCorrupt},
		"flipped bit":      {edit(func(b []byte) []byte { b[40] ^= 1; return b }), state.ErrCorrupt},
		"zeroed checksum":  {edit(func(b []byte) []byte { copy(b[len(b)-4:], []byte{0, 0, 0, 0}); return b }), state.ErrCorrupt},
		"newer version":    {edit(func(b []byte) []byte { b[8] = state.Version + 1; return b }), state.ErrNewer},
		"version zero":     {edit(func(b []byte) []byte { b[8] = 0; return reseal(b) }), state.ErrCorrupt},
		"reserved set":     {edit(func(b []byte) []byte { b[10] = 1; return reseal(b) }), state.ErrCorrupt},
		"not a state file": {[]byte(`{"cgroups": []}`), state.ErrNotState},
		"zeros":            {make([]byte, 4096), state.ErrNotState},
		"huge count": {func() []byte {
			// The count of cgroups with late run, the body's last
			// entry and one byte wide here, claims more entries than
			// the body could hold.
			f := sample()
			noLateRun(f)
			b := state.Append(nil, f)
			b[len(b)-5] = 0x7f
			return reseal(b)
		}(), state.ErrCorrupt},
		"late run of no cgroup": {func() []byte {
			// The body ends with one late run: index 1, run 3; the
			// index made one past the last cgroup.
			f := sample()
			b := state.Append(nil, f)
			if b[len(b)-7] != 1 || b[len(b)-6] != 1 || b[len(b)-5] != 3 {
				panic("the sample does not end with its one late run")
			}
			b[len(b)-6] = byte(len(f.Table.Cgroups))
			return reseal(b)
		}(), state.ErrCorrupt},
		"late run above the run": {func() []byte {
			f := sample()
			f.Table.Cgroups[1].LateRun = f.Table.Cgroups[1].Own.RunNanoseconds + 1
			return state.Append(nil, f)
		}(), state.ErrCorrupt},
		"sealed nonsense": {func() []byte {
			// A valid checksum over a body that does not describe a
			// table: the first cgroup's parent is itself.
			f := sample()
			f.Table.Cgroups[1].Parent = 1
			return state.Append(nil, f)
		}(), state.ErrCorrupt},
		"credited twice": {func() []byte {
			f := sample()
			f.Table.Totals.Credited[1].ID = f.Table.Totals.Credited[0].ID
			return state.Append(nil, f)
		}(), state.ErrCorrupt},
		"latency of another layout": {func() []byte {
			// One bucket more than this daemon's histograms have.
			f := sample()
			b := state.Append(nil, f)
			at := binary.AppendUvarint(nil, uint64(len(f.Latency.Totals)))
			at = binary.AppendVarint(at, f.Latency.Since.UnixNano())
			i := bytes.Index(b, binary.AppendUvarint(at, schedlat.Buckets))
			if i < 0 || schedlat.Buckets >= 127 {
				panic("no one-byte bucket count in the sample")
			}
			b[i+len(at)]++
			return reseal(b)
		}(), state.ErrCorrupt},
		"latency bucket out of range": {func() []byte {
			// The last bucket's index, the only one set in "/", made
			// one past the end: "/" sorts first, its index byte is
			// the first schedlat.Buckets-1 after the path.
			f := sample()
			f.Latency.Totals = map[string]schedlat.Counts{"/": {Waits: 1, Buckets: [schedlat.Buckets]uint64{schedlat.Buckets - 1: 1}}}
			b := state.Append(nil, f)
			i := bytes.Index(b, []byte{1, '/', 1, 0, 1, schedlat.Buckets - 1})
			if i < 0 {
				panic("no bucket index in the sample")
			}
			b[i+5]++
			return reseal(b)
		}(), state.ErrCorrupt},
		"credited without a store": {func() []byte {
			f := sample()
			f.Table.Totals.Store = 0
			return state.Append(nil, f)
		}(), state.ErrCorrupt},
	}
	return m
}

func TestDecodeRefuses(t *testing.T) {
	for name, tc := range badFiles() {
		t.Run(name, func(t *testing.T) {
			f, err := state.Decode(tc.b)
			if !errors.Is(err, tc.want) || f != nil {
				t.Errorf("Decode = %v, %v; want nil, %v", f, err, tc.want)
			}
		})
	}
	// Every prefix of a good file is refused as truncated (or, shorter
	// than the magic, as not a state file only if it differs).
	good := state.Append(nil, sample())
	for n := range len(good) {
		if _, err := state.Decode(good[:n]); !errors.Is(err, state.ErrTruncated) {
			t.Fatalf("Decode of the first %d of %d bytes = %v, want ErrTruncated", n, len(good), err)
		}
	}
}

func TestOriginCheck(t *testing.T) {
	for name, saved := range map[string]state.Origin{
		"other boot":      {BootID: "other", Hierarchy: origin.Hierarchy, Dir: origin.Dir, RootInode: 1},
		"other hierarchy": {BootID: origin.BootID, Hierarchy: "unified", Dir: origin.Dir, RootInode: 1},
		"other dir":       {BootID: origin.BootID, Hierarchy: origin.Hierarchy, Dir: "/host/sys/fs/cgroup/cpuacct", RootInode: 1},
		"other root":      {BootID: origin.BootID, Hierarchy: origin.Hierarchy, Dir: origin.Dir, RootInode: 2},
	} {
		if err := origin.Check(saved); !errors.Is(err, state.ErrForeign) {
			t.Errorf("%s: Check = %v, want ErrForeign", name, err)
		}
	}
	if err := origin.Check(origin); err != nil {
		t.Errorf("Check of the same origin = %v", err)
	}
}

func TestWriteFileReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	for i, b := range [][]byte{[]byte("first, longer"), []byte("second")} {
		if err := state.WriteFile(path, b); err != nil {
			t.Fatal(err)
		}
		got, err := state.ReadFile(path)
		if err != nil || string(got) != string(b) {
			t.Errorf("write %d: read %q, %v", i, got, err)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("%d files in the directory after two writes, want 1: %v", len(ents), ents)
	}
	if err := state.WriteFile(filepath.Join(dir, "missing", "state"), nil); err == nil {
		t.Errorf("WriteFile into a missing directory succeeded")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(state.Append(nil, sample()))
	f.Add(state.Append(nil, &state.File{Table: container.State{Cgroups: []container.CgroupState{{ID: 1, Parent: -1, Path: "/"}}}}))
	for _, tc := range badFiles() {
		f.Add(tc.b)
	}
	for _, name := range []string{"v1", "v2", "v3"} {
		if b, err := os.ReadFile("testdata/" + name + ".state"); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := state.Decode(b)
		if err != nil {
			if file != nil {
				t.Fatalf("Decode returned a file with %v", err)
			}
			return
		}
		// What decodes is a table, and encodes back to itself.
		if err := file.Table.Validate(); err != nil {
			t.Fatalf("decoded an invalid table: %v", err)
		}
		again, err := state.Decode(state.Append(nil, file))
		if err != nil {
			t.Fatalf("re-encoded file refused: %v", err)
		}
		if diff := cmp.Diff(file, again); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}
