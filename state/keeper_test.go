package state_test

import (
	"bytes"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/schedlat"
	"github.com/schedstatd/schedstatd/state"
)

// node is a synthetic node whose table a keeper saves and restores.
type node struct {
	k    *synth.Kernel
	tree *synth.Tree
}

func newNode() *node {
	n := &node{k: synth.NewKernel(), tree: synth.NewTree("/", "/a")}
	n.k.Spawn(10).Stat = stat(100, 10, 1)
	n.tree.Set("/a", 10)
	return n
}

func (n *node) table(t *testing.T) *container.Table {
	tb := container.NewTable(n.tree, n.k)
	t.Cleanup(func() { tb.Close() })
	return tb
}

// keeper returns a keeper of path with a log the test can read.
func keeper(t *testing.T, path string, o state.Origin) (*state.Keeper, *bytes.Buffer) {
	var log bytes.Buffer
	k := state.NewKeeper(state.Config{Path: path, Interval: time.Hour, Origin: o, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	t.Cleanup(func() { k.Close() })
	return k, &log
}

// metric returns the keeper's metric name (with the result label if set).
func metric(t *testing.T, k *state.Keeper, name, result string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(k)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) > 0 && m.GetLabel()[0].GetValue() != result {
				continue
			}
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
			return m.Gauge.GetValue()
		}
	}
	t.Fatalf("no %s{result=%q}", name, result)
	return 0
}

func TestKeeperRestores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "state")
	n := newNode()
	k, log := keeper(t, path, origin)
	tb := n.table(t)
	k.Restore(tb)
	if metric(t, k, "schedstatd_state_restore", "missing") != 1 || !strings.Contains(log.String(), "no state file") {
		t.Errorf("first start: not reported missing:\n%s", log)
	}
	if err := tb.Pass(); err != nil {
		t.Fatal(err)
	}
	if !k.AfterPass(tb, true) {
		t.Errorf("a requested pass, written, is not reported kept")
	}
	// Within the interval a pass nobody waits for is not written, and
	// so not to be served.
	if err := tb.Pass(); err != nil {
		t.Fatal(err)
	}
	if k.AfterPass(tb, false) {
		t.Errorf("a pass the keeper did not write is reported kept")
	}
	k.Close()
	if w := metric(t, k, "schedstatd_state_writes_total", ""); w != 1 {
		t.Errorf("%v writes after a requested pass and one within the interval, want 1", w)
	}

	n.k.Task(10).Stat = stat(150, 15, 2)
	k2, log2 := keeper(t, path, origin)
	tb2 := n.table(t)
	k2.Restore(tb2)
	if err := tb2.Pass(); err != nil {
		t.Fatal(err)
	}
	k2.AfterPass(tb2, false)
	if got, _ := tb2.Snapshot().Lookup("/a"); got.Stat != stat(150, 15, 2) {
		t.Errorf("/a after the restart = %+v, want the task's 150/15/2 counted once", got.Stat)
	}
	if metric(t, k2, "schedstatd_state_restore", "restored") != 1 || metric(t, k2, "schedstatd_state_resumed_tasks", "") != 1 {
		t.Errorf("restart not reported restored with one task:\n%s", log2)
	}
}

func TestKeeperRefusesBadFiles(t *testing.T) {
	cases := map[string][]byte{}
	for name, tc := range badFiles() {
		cases[name] = tc.b
	}
	foreign := sample()
	foreign.Origin.BootID = "another boot"
	cases["foreign"] = state.Append(nil, foreign)
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state")
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			k, log := keeper(t, path, origin)
			tb := newNode().table(t)
			k.Restore(tb)
			_, err := state.Decode(b)
			if err == nil {
				err = origin.Check(foreign.Origin)
			}
			reason := state.Reason(err)
			if metric(t, k, "schedstatd_state_restore", reason) != 1 {
				t.Errorf("result %s not reported", reason)
			}
			if lines := strings.Count(log.String(), "\n"); lines != 1 || !strings.Contains(log.String(), "reason="+reason) {
				t.Errorf("want one log line with reason=%s:\n%s", reason, log)
			}
			if tb.Restored().Restored {
				t.Errorf("table restored from a bad file")
			}
			// Starting fresh, the file is replaced by a good one.
			if err := tb.Pass(); err != nil {
				t.Fatal(err)
			}
			k.AfterPass(tb, true)
			if b, err := state.ReadFile(path); err != nil {
				t.Fatal(err)
			} else if _, err := state.Decode(b); err != nil {
				t.Errorf("the file written after a bad one: %v", err)
			}
		})
	}
}

func TestKeeperLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	k1, _ := keeper(t, path, origin)
	k1.Restore(newNode().table(t))
	k2, log := keeper(t, path, origin)
	k2.Restore(newNode().table(t))
	if metric(t, k2, "schedstatd_state_restore", "locked") != 1 || !strings.Contains(log.String(), "another process") {
		t.Errorf("a second keeper of one file is not refused:\n%s", log)
	}
}

func TestKeeperUnwritable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	k, log := keeper(t, filepath.Join(file, "state"), origin)
	tb := newNode().table(t)
	k.Restore(tb)
	if metric(t, k, "schedstatd_state_restore", "unwritable") != 1 {
		t.Errorf("a state path below a file is not reported unwritable:\n%s", log)
	}
	if err := tb.Pass(); err != nil {
		t.Fatal(err)
	}
	k.AfterPass(tb, true) // runs on

	// A directory that goes away after the start: each write fails, the
	// log says so once, the daemon runs on.
	sub := filepath.Join(dir, "sub")
	k2, log2 := keeper(t, filepath.Join(sub, "state"), origin)
	tb2 := newNode().table(t)
	k2.Restore(tb2)
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := tb2.Pass(); err != nil {
			t.Fatal(err)
		}
		k2.AfterPass(tb2, true)
	}
	if f := metric(t, k2, "schedstatd_state_write_failures_total", ""); f != 3 {
		t.Errorf("%v write failures, want 3", f)
	}
	if n := strings.Count(log2.String(), "cannot be written"); n != 1 {
		t.Errorf("write failure logged %d times, want once:\n%s", n, log2)
	}
}

// TestKeeperRestoresVersion1: a state file of the previous format, as a
// daemon before this one left it, is restored (a table of totals restored
// from it primes its source, having no credited totals), and the next
// write is of the current format with the same table.
func TestKeeperRestoresVersion1(t *testing.T) {
	b, err := os.ReadFile("testdata/v1.state")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	k, log := keeper(t, path, origin)
	tb := newNode().table(t)
	k.Restore(tb)
	if metric(t, k, "schedstatd_state_restore", "restored") != 1 {
		t.Fatalf("a version 1 file was not restored:\n%s", log)
	}
	if rs := tb.Restored(); !rs.Restored || rs.TotalsContinued || rs.Tasks != len(sample().Table.Tasks) {
		t.Errorf("restore stats %+v", rs)
	}
	k.Stop(tb)
	b, err = state.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := state.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if v := b[8]; v != state.Version || len(f.Table.Cgroups) != len(sample().Table.Cgroups) || f.Table.Totals.Store != 0 {
		t.Errorf("rewritten as version %d with %d cgroups, totals %+v", v, len(f.Table.Cgroups), f.Table.Totals)
	}
}

// counts is a latency program's map: counts by cgroup id, counting since
// loaded.
type counts struct {
	m      map[uint64]schedlat.Counts
	loaded time.Time
}

func (c *counts) Read() (map[uint64]schedlat.Counts, error) { return maps.Clone(c.m), nil }
func (c *counts) Forget(ids []uint64)                       {}
func (c *counts) Latency() bool                             { return true }
func (c *counts) Preemption() bool                          { return true }
func (c *counts) Since() time.Time                          { return c.loaded }

// TestKeeperKeepsLatency: the latency totals a pass's scrapes serve are
// in the file written for it, and a restarted daemon's go on from them,
// since the first daemon's start, however little its new program has
// counted.
func TestKeeperKeepsLatency(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	n := newNode()
	waits := func(n uint64) schedlat.Counts {
		c := schedlat.Counts{Waits: n, WaitNanoseconds: 1000 * n, Other: n}
		c.Buckets[3] = n
		return c
	}
	start := func(c *counts) (*state.Keeper, *container.Table, *schedlat.Rollup) {
		r := schedlat.NewRollup(c)
		k := state.NewKeeper(state.Config{Path: path, Interval: time.Hour, Origin: origin, Latency: r})
		t.Cleanup(func() { k.Close() })
		tb := n.table(t)
		k.Restore(tb)
		if err := tb.Pass(); err != nil {
			t.Fatal(err)
		}
		return k, tb, r
	}
	served := func(r *schedlat.Rollup, tb *container.Table) map[string]uint64 {
		t.Helper()
		tot, err := r.Totals(tb.Snapshot())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]uint64{}
		for p, c := range tot {
			got[p] = c.Waits
			if c.Buckets[3] != c.Waits || c.Other != c.Waits || c.WaitNanoseconds != 1000*c.Waits {
				t.Errorf("%s: counts %+v do not add up", p, c)
			}
		}
		return got
	}

	first := &counts{m: map[uint64]schedlat.Counts{}, loaded: time.Unix(1764570000, 0)}
	k, tb, r := start(first)
	a, _ := tb.Snapshot().Lookup("/a")
	first.m[a.ID] = waits(5)
	k.AfterPass(tb, true)
	// Counted after the write: the pass's scrapes do not serve it.
	first.m[a.ID] = waits(8)
	if diff := cmp.Diff(map[string]uint64{"/": 5, "/a": 5}, served(r, tb)); diff != "" {
		t.Errorf("served of the written pass (-want +got):\n%s", diff)
	}
	k.Close()

	second := &counts{m: map[uint64]schedlat.Counts{a.ID: waits(2)}, loaded: time.Now()}
	_, tb2, r2 := start(second)
	if diff := cmp.Diff(map[string]uint64{"/": 7, "/a": 7}, served(r2, tb2)); diff != "" {
		t.Errorf("served after the restart (-want +got):\n%s", diff)
	}
	if !r2.Since().Equal(first.loaded) {
		t.Errorf("since %v after the restart, want the first daemon's %v", r2.Since(), first.loaded)
	}
}
