package aggregate

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testbpf"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"golang.org/x/sys/unix"
)

// TestRestart: a table of kernel totals saves its state, its source goes
// (the daemon stops), and a new source and table restore it and prime:
// no series of the test cgroup falls across the restart, while a thread
// spins and others churn in it.
func TestRestart(t *testing.T) {
	requireTaskStorage(t)
	h := hierarchy(t, walked)
	dir := testcg.Make(t, walked)
	path := rel(t, h, dir)
	testproc.StartIn(t, 1, dir)
	testproc.StartChurnIn(t, dir)
	var last container.CgroupStats
	check := func(step string, tb *container.Table) {
		t.Helper()
		cg, ok := tb.Snapshot().Lookup(path)
		if !ok {
			t.Fatalf("%s: no %s", step, path)
		}
		if cg.Stat.RunNanoseconds < last.Stat.RunNanoseconds || cg.Stat.WaitNanoseconds < last.Stat.WaitNanoseconds || cg.Stat.Timeslices < last.Stat.Timeslices {
			t.Errorf("%s: %s fell from %+v to %+v", step, path, last.Stat, cg.Stat)
		}
		last = cg
	}
	var saved container.State
	for round := range 5 {
		s, err := Open(Options{Hierarchy: h, Exits: true})
		if err != nil {
			t.Fatal(err)
		}
		tb := container.NewCgroupTable(s.Lister(), s)
		if round > 0 {
			if err := tb.Restore(saved); err != nil {
				t.Fatal(err)
			}
			s.Prime()
		}
		for range 5 {
			time.Sleep(50 * time.Millisecond)
			if err := tb.Pass(); err != nil {
				t.Fatal(err)
			}
			check("pass", tb)
		}
		saved = tb.State()
		tb.Close()
		s.Close()
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%+v", last.Stat)
}

// pinDir returns a pin path of the test's own: a directory on a bpf
// filesystem mounted for the test, unmounted (with every pin in it) when
// the test ends, after the sources it opened are closed.
func pinDir(t *testing.T) string {
	t.Helper()
	pins := filepath.Join(testbpf.Mount(t), "pins")
	t.Cleanup(func() {
		if err := removePins(pins); err != nil {
			t.Error(err)
		}
	})
	return pins
}

// TestRestartLosesNothing: threads spin in a cgroup, more of them than
// there are CPUs, so they wait on the runqueue; a table of kernel totals
// saves its state, runs one more pass (as a background pass between two
// writes does), and its source and table close (the daemon stops); the
// threads run on with no daemon; a new source and table open with the
// same pin path and restore the saved state. Fenced with SIGSTOP, the
// cgroup's run, wait and timeslices must then equal the sum of its
// threads' /proc/<tid>/schedstat within 0.5 %, and no series falls below
// what was served before. Without the pinned maps the restore primes the
// source, and the wait and timeslices between the save and the new first
// pass are lost: the unpinned case shows the test tells the two apart.
// With the pins removed meanwhile, or a state of the previous format (no
// credited totals), the new source starts fresh maps and primes, and no
// series falls.
func TestRestartLosesNothing(t *testing.T) {
	requireTaskStorage(t)
	for _, tc := range []struct {
		name       string
		pinned     bool
		removePins bool
		oldFormat  bool
	}{
		{name: "pinned", pinned: true},
		{name: "unpinned"},
		{name: "pins removed", pinned: true, removePins: true},
		{name: "state of format 1", pinned: true, oldFormat: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hierarchy(t, walked)
			var pins string
			if tc.pinned {
				pins = pinDir(t)
			}
			dir := testcg.Make(t, walked)
			path := rel(t, h, dir)
			p := testproc.StartIn(t, 2*runtime.NumCPU(), dir)
			open := func() (*Source, *container.Table) {
				t.Helper()
				s, err := Open(Options{Hierarchy: h, Exits: true, PinPath: pins})
				if err != nil {
					t.Fatal(err)
				}
				tb := container.NewCgroupTable(s.Lister(), s)
				t.Cleanup(func() { tb.Close(); s.Close() })
				return s, tb
			}
			pass := func(tb *container.Table) container.CgroupStats {
				t.Helper()
				if err := tb.Pass(); err != nil {
					t.Fatal(err)
				}
				cg, ok := tb.Snapshot().Lookup(path)
				if !ok {
					t.Fatalf("no %s", path)
				}
				return cg
			}
			s, tb := open()
			if err := s.Begin(tb); err != nil {
				t.Fatal(err)
			}
			pass(tb)
			time.Sleep(200 * time.Millisecond)
			served := pass(tb)
			saved := tb.State()
			if tc.pinned && (saved.Totals.Store == 0 || len(saved.Totals.Credited) == 0) {
				t.Fatalf("pinned, the state keeps no credited totals: store %d, %d entries", saved.Totals.Store, len(saved.Totals.Credited))
			}
			if tc.oldFormat {
				saved.Totals = container.TotalsState{} // as state.Decode reads a version 1 file
			}
			time.Sleep(200 * time.Millisecond)
			pass(tb) // after the last write
			time.Sleep(200 * time.Millisecond)
			tb.Close()
			s.Close()
			if tc.removePins {
				if err := removePins(pins); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(200 * time.Millisecond) // no daemon

			s, tb = open()
			if err := tb.Restore(saved); err != nil {
				t.Fatal(err)
			}
			if err := s.Begin(tb); err != nil {
				t.Fatal(err)
			}
			continued := tc.pinned && !tc.removePins && !tc.oldFormat
			if got := tb.Restored().TotalsContinued; got != continued {
				t.Errorf("totals continued %v, want %v", got, continued)
			}
			if tc.pinned && !continued && s.Store() == saved.Totals.Store {
				t.Errorf("primed over the saved store %d: want fresh maps", s.Store())
			}
			time.Sleep(100 * time.Millisecond)
			p.Stop(t)
			got := pass(tb)
			want := lifetimes(t, p)
			if got.Stat.RunNanoseconds < served.Stat.RunNanoseconds || got.Stat.WaitNanoseconds < served.Stat.WaitNanoseconds || got.Stat.Timeslices < served.Stat.Timeslices {
				t.Errorf("%s fell across the restart from %+v to %+v", path, served.Stat, got.Stat)
			}
			ratio := func(g, w uint64) float64 { return float64(g) / float64(w) }
			rw, rs, rr := ratio(got.Stat.WaitNanoseconds, want.WaitNanoseconds), ratio(got.Stat.Timeslices, want.Timeslices), ratio(got.Stat.RunNanoseconds, want.RunNanoseconds)
			t.Logf("threads' schedstat: run %.4fs wait %.4fs timeslices %d; the table after the restart: run %.4fs (%.4f) wait %.4fs (%.4f, %.4fs lost) timeslices %d (%.4f); restore %+v",
				float64(want.RunNanoseconds)/1e9, float64(want.WaitNanoseconds)/1e9, want.Timeslices,
				float64(got.Stat.RunNanoseconds)/1e9, rr, float64(got.Stat.WaitNanoseconds)/1e9, rw,
				(float64(want.WaitNanoseconds)-float64(got.Stat.WaitNanoseconds))/1e9, got.Stat.Timeslices, rs, tb.Restored())
			within := func(r float64) bool { return r >= 0.995 && r <= 1.005 }
			switch {
			case continued && !(within(rw) && within(rs) && within(rr)):
				t.Errorf("after the restart: %+v; the threads' schedstat sums to %+v: want wait, timeslices and run within 0.5 %%", got.Stat, want)
			case tc.name == "unpinned" && within(rw):
				t.Errorf("unpinned, the wait after the restart is %.4f of the threads': the wait between the save and the first pass should be lost", rw)
			}
		})
	}
}

// TestPinsOfAnotherShape: pinned maps that do not fit the source's (here
// room for another number of cgroups) are replaced by fresh ones, with one
// line in the log, and the source loads.
func TestPinsOfAnotherShape(t *testing.T) {
	requireTaskStorage(t)
	h := hierarchy(t, walked)
	pins := pinDir(t)
	s, err := Open(Options{Hierarchy: h, MaxCgroups: 1000, PinPath: pins})
	if err != nil {
		t.Fatal(err)
	}
	first := s.Store()
	s.Close()
	var log bytes.Buffer
	s, err = Open(Options{Hierarchy: h, MaxCgroups: 2000, PinPath: pins, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Store() == 0 || s.Store() == first {
		t.Errorf("store %d, first %d: want fresh pinned maps", s.Store(), first)
	}
	if n := strings.Count(log.String(), "\n"); n != 1 || !strings.Contains(log.String(), "do not fit") {
		t.Errorf("log %q: want one line saying the pins do not fit", log.String())
	}
	if err := s.Read(); err != nil {
		t.Fatal(err)
	}
	// The same shape again goes on with them.
	again := s.Store()
	s.Close()
	s, err = Open(Options{Hierarchy: h, MaxCgroups: 2000, PinPath: pins})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Store() != again {
		t.Errorf("store %d, want the pinned %d", s.Store(), again)
	}
}

// TestPreparePins: a pin path below the mount point given, on no bpf
// filesystem, gets one mounted there and is made; one already on bpffs
// is only made; one elsewhere on no bpffs is refused.
func TestPreparePins(t *testing.T) {
	e2e.RequireRoot(t)
	at := t.TempDir()
	t.Cleanup(func() {
		if on, _ := onBPFFS(at); on {
			if err := unix.Unmount(at, 0); err != nil {
				t.Errorf("unmount %s: %v", at, err)
			}
		}
	})
	dir := filepath.Join(at, "a", "b")
	mounted, err := preparePins(dir, at)
	if err != nil || !mounted {
		t.Fatalf("preparePins = %v, %v; want a mount", mounted, err)
	}
	if on, err := onBPFFS(dir); err != nil || !on {
		t.Errorf("%s on bpffs: %v, %v", dir, on, err)
	}
	if mounted, err := preparePins(filepath.Join(at, "c"), at); err != nil || mounted {
		t.Errorf("again: %v, %v; want no mount", mounted, err)
	}
	if _, err := preparePins(filepath.Join(t.TempDir(), "pins"), at); err == nil {
		t.Error("a pin path outside the mount point, on no bpffs, was accepted")
	}
}
