package cgroupfs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// readKernel reads a cgroup's bandwidth or pressure file as the kernel
// has it now, with the package's parser (whose agreement with strconv and
// procfs the parser tests check).
func readKernel[T any](t *testing.T, path string, parse func([]byte) (T, error)) T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// between reports whether every counter of got lies between lo and hi.
func between(lo, got, hi []uint64) bool {
	for i := range got {
		if got[i] < lo[i] || got[i] > hi[i] {
			return false
		}
	}
	return true
}

func bandwidthCounters(b Bandwidth) []uint64 {
	return []uint64{b.Periods, b.ThrottledPeriods, b.ThrottledNanoseconds, b.Bursts, b.BurstNanoseconds}
}

func pressureCounters(p Pressure) []uint64 { return []uint64{p.SomeNanoseconds, p.FullNanoseconds} }

// waitThrottled waits until the cgroup's cpu.stat at path shows at least
// n throttled periods.
func waitThrottled(t *testing.T, path string, n uint64) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); readKernel(t, path, ParseBandwidth).ThrottledPeriods < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%s: fewer than %d throttled periods in 20 s", path, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestKernelFilesMatchKernel runs a spinning thread under a CPU quota of
// 20 ms per 100 ms in a real cgroup and checks that a walk reports the
// kernel's own bandwidth and pressure counters: each value it lists lies
// between a read of the kernel file just before the walk and one just
// after. On this hybrid layout the quota is set in the v1 cpu hierarchy
// and the walk of cpuacct reads it from the cpu twin at the same path,
// the pressure from the v2 twin; a walk of the unified hierarchy, where
// the cpu controller is not available, has no bandwidth series.
func TestKernelFilesMatchKernel(t *testing.T) {
	t.Run("v1", func(t *testing.T) {
		cpu := realHierarchy(t, "cpu")
		acct := realHierarchy(t, "cpuacct")
		unified := realHierarchy(t, Unified)
		top := makeCgroups(t, cpu)
		makeTwin(t, acct, top)
		makeTwin(t, unified, top)
		dir := filepath.Join(cpu, top)
		writeFile(t, filepath.Join(dir, "cpu.cfs_period_us"), "100000")
		writeFile(t, filepath.Join(dir, "cpu.cfs_quota_us"), "20000")
		spin := testproc.Spin(t)
		for _, h := range []string{cpu, acct, unified} {
			testcg.Move(t, filepath.Join(h, top), spin.Process.Pid)
		}
		stat, psi := filepath.Join(dir, bandwidthFile), filepath.Join(unified, top, pressureFile)
		waitThrottled(t, stat, 3)
		for _, walked := range []string{"cpuacct", "cpu"} {
			h, err := Open(sysCgroup, walked)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := h.BandwidthFile(), filepath.Join(cpu, bandwidthFile); got != want {
				t.Errorf("walking %s: BandwidthFile() = %q, want %q", walked, got, want)
			}
			if got, want := h.PressureFile(), filepath.Join(unified, pressureFile); got != want {
				t.Errorf("walking %s: PressureFile() = %q, want %q", walked, got, want)
			}
			checkKernelFiles(t, h, top, stat, psi, true)
			checkKeptKernelFiles(t, walked, top, stat, psi, true)
		}
	})
	t.Run("unified", func(t *testing.T) {
		unified := realHierarchy(t, Unified)
		quota := enableCPUController(t, unified)
		top := makeCgroups(t, unified)
		dir := filepath.Join(unified, top)
		if quota {
			writeFile(t, filepath.Join(dir, "cpu.max"), "20000 100000")
		}
		spin := testproc.Spin(t)
		testcg.Move(t, dir, spin.Process.Pid)
		stat := filepath.Join(dir, bandwidthFile)
		if quota {
			waitThrottled(t, stat, 3)
		} else {
			t.Logf("no cpu controller in %s (it is bound to v1 here): no quota, no bandwidth series", unified)
			time.Sleep(300 * time.Millisecond)
		}
		h, err := Open(sysCgroup, Unified)
		if err != nil {
			t.Fatal(err)
		}
		checkKernelFiles(t, h, top, stat, filepath.Join(dir, pressureFile), quota)
		checkKeptKernelFiles(t, Unified, top, stat, filepath.Join(dir, pressureFile), quota)
	})
}

// checkKernelFiles walks h and checks the cgroup /top against its kernel
// files stat and psi, read before and after the walk. withBandwidth says
// whether the cgroup has bandwidth counters; without, it must have none.
func checkKernelFiles(t *testing.T, h *Hierarchy, top, stat, psi string, withBandwidth bool) {
	t.Helper()
	var l Listing
	if err := h.List(&l); err != nil { // warm: the first pass builds the cache
		t.Fatal(err)
	}
	bw0, p0 := readKernel(t, stat, ParseBandwidth), readKernel(t, psi, ParsePressure)
	if err := h.List(&l); err != nil {
		t.Fatal(err)
	}
	bw1, p1 := readKernel(t, stat, ParseBandwidth), readKernel(t, psi, ParsePressure)
	c, ok := subtree(&l, top)[""]
	if !ok || c.Err != nil {
		t.Fatalf("walking %s: /%s listed %v, error %v", h.Name(), top, ok, c.Err)
	}
	t.Logf("walking %s: kernel %+v / %+v, listed %+v / %+v", h.Name(), bw0, p0, c.Bandwidth, c.Pressure)
	switch {
	case c.Bandwidth.HasThrottling != withBandwidth || bw0.HasThrottling != withBandwidth:
		t.Errorf("walking %s: bandwidth listed %v, in the kernel file %v; want %v", h.Name(), c.Bandwidth.HasThrottling, bw0.HasThrottling, withBandwidth)
	case c.Bandwidth.HasBursts != bw0.HasBursts:
		t.Errorf("walking %s: bursts listed %v, in the kernel file %v", h.Name(), c.Bandwidth.HasBursts, bw0.HasBursts)
	case !between(bandwidthCounters(bw0), bandwidthCounters(c.Bandwidth), bandwidthCounters(bw1)):
		t.Errorf("walking %s: listed %+v, not between the kernel's %+v and %+v", h.Name(), c.Bandwidth, bw0, bw1)
	case withBandwidth && c.Bandwidth.ThrottledPeriods == 0:
		t.Errorf("walking %s: a quota-bound spinner shows no throttled period: %+v", h.Name(), c.Bandwidth)
	}
	switch {
	// cpu.pressure has a full line from Linux 5.13 on; 5.10's has some only.
	case !c.Pressure.HasSome || c.Pressure.HasFull != p0.HasFull:
		t.Errorf("walking %s: pressure %+v, want some, and full as the kernel file has it (%v)", h.Name(), c.Pressure, p0.HasFull)
	case !between(pressureCounters(p0), pressureCounters(c.Pressure), pressureCounters(p1)):
		t.Errorf("walking %s: listed %+v, not between the kernel's %+v and %+v", h.Name(), c.Pressure, p0, p1)
	case c.Pressure.SomeNanoseconds == 0:
		t.Errorf("walking %s: a spinner sharing its CPUs shows no pressure", h.Name())
	}
}

// checkKeptKernelFiles is checkKernelFiles over the hierarchy walked
// with its counter files kept open and read with pread: the pass after
// the first reads them through the fds kept by the first.
func checkKeptKernelFiles(t *testing.T, walked, top, stat, psi string, withBandwidth bool) {
	t.Helper()
	h, err := Open(sysCgroup, walked)
	if err != nil {
		t.Fatal(err)
	}
	keeper := &countKeeper{max: 1 << 20}
	h.KeepFiles(keeper)
	defer h.Close()
	checkKernelFiles(t, h, top, stat, psi, withBandwidth)
	if keeper.n == 0 {
		t.Errorf("walking %s with kept files: none kept", walked)
	}
}

// enableCPUController enables the v2 cpu controller for the children of
// the cgroup2 root dir, as a pure v2 node without systemd may not have,
// and reports whether it could: on a hybrid node the controller is bound
// to v1 and cannot be.
func enableCPUController(t *testing.T, dir string) bool {
	t.Helper()
	has := func(file string) bool {
		b, _ := os.ReadFile(filepath.Join(dir, file))
		return slices.Contains(strings.Fields(string(b)), "cpu")
	}
	if has("cgroup.subtree_control") {
		return true
	}
	if !has("cgroup.controllers") {
		return false
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu"), 0); err != nil {
		t.Fatalf("enable the cpu controller in %s: %v", dir, err)
	}
	// Disabling fails while another child uses it; the node then keeps it.
	t.Cleanup(func() { os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("-cpu"), 0) })
	return true
}
