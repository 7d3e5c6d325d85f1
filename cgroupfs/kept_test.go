package cgroupfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// countKeeper is an FDKeeper of at most max fds that counts those kept.
type countKeeper struct{ max, n int }

func (k *countKeeper) KeepCgroupFD() bool {
	if k.n >= k.max {
		return false
	}
	k.n++
	return true
}

func (k *countKeeper) ReleaseCgroupFD() { k.n-- }

// usageOf reads the CPU counter of the cgroup dir of a hierarchy of
// version v as the kernel has it now.
func usageOf(t *testing.T, v2 bool, dir string) uint64 {
	t.Helper()
	if v2 {
		return readKernel(t, filepath.Join(dir, usageFileV2), ParseCPUStat).UsageMicroseconds * 1000
	}
	return readKernel(t, filepath.Join(dir, usageFileV1), ParseUsage)
}

// TestKeptFilesFreshAndRecreated walks a real cgroup holding a spinner
// with its counter files kept open: each pass's pread shows the counter of
// that moment (between the kernel file read before and after the pass,
// and growing); a cgroup removed is left out and its fds given back; one
// removed and made again under the same name between two passes is
// listed with its new id and its new counter, with no error, read through
// a new fd.
func TestKeptFilesFreshAndRecreated(t *testing.T) {
	name := testcg.Default()
	hdir := realHierarchy(t, name)
	top := makeCgroups(t, hdir, "a")
	a := filepath.Join(hdir, top, "a")
	spin := testproc.Spin(t)
	testcg.Move(t, a, spin.Process.Pid)
	h, err := Open(sysCgroup, name)
	if err != nil {
		t.Fatal(err)
	}
	keeper := &countKeeper{max: 1 << 20}
	h.KeepFiles(keeper)
	t.Cleanup(func() { h.Close() })
	v2 := h.Version() == V2
	var l Listing
	if err := h.List(&l); err != nil {
		t.Fatal(err)
	}
	first := subtree(&l, top)["/a"]
	var last uint64
	for i := range 3 {
		// The spinner runs: wait until the kernel's counter has moved
		// past the last pass's, however loaded the machine.
		for deadline := time.Now().Add(20 * time.Second); usageOf(t, v2, a) <= last; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("pass %d: the spinner's cgroup counter stayed at %d for 20 s", i, last)
			}
		}
		lo := usageOf(t, v2, a)
		if err := h.List(&l); err != nil {
			t.Fatal(err)
		}
		hi := usageOf(t, v2, a)
		c := subtree(&l, top)["/a"]
		if c.Err != nil || !c.HasUsage || c.UsageNanoseconds < lo || c.UsageNanoseconds > hi || c.UsageNanoseconds <= last {
			t.Fatalf("pass %d: /a usage %d (has %v, err %v), kernel %d before and %d after, last pass %d", i, c.UsageNanoseconds, c.HasUsage, c.Err, lo, hi, last)
		}
		last = c.UsageNanoseconds
		if c.ID != first.ID {
			t.Fatalf("pass %d: /a id %d, first pass %d", i, c.ID, first.ID)
		}
	}
	if keeper.n == 0 || h.KeptFiles() != keeper.n {
		t.Fatalf("%d files kept, keeper counts %d: want every counter file kept", h.KeptFiles(), keeper.n)
	}

	// Made again under the same name between two passes.
	testcg.Move(t, filepath.Join(hdir, top), spin.Process.Pid)
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(a, 0o755); err != nil {
		t.Fatal(err)
	}
	kept := keeper.n
	if err := h.List(&l); err != nil {
		t.Fatal(err)
	}
	c, ok := subtree(&l, top)["/a"]
	if !ok || c.Err != nil || !c.HasUsage || c.ID == first.ID || c.UsageNanoseconds >= last {
		t.Fatalf("recreated /a: listed %v, id %d (was %d), usage %d (has %v; was %d), err %v: want the new cgroup and its new counter", ok, c.ID, first.ID, c.UsageNanoseconds, c.HasUsage, last, c.Err)
	}
	if keeper.n != kept {
		t.Errorf("recreated /a: %d fds kept, %d before: want the old cgroup's replaced by the new one's", keeper.n, kept)
	}

	// Removed.
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if err := h.List(&l); err != nil {
		t.Fatal(err)
	}
	got := subtree(&l, top)
	if _, ok := got["/a"]; ok || got[""].Err != nil {
		t.Errorf("removed /a: still listed %v, parent error %v", ok, got[""].Err)
	}
	if keeper.n >= kept || h.KeptFiles() != keeper.n {
		t.Errorf("removed /a: %d fds kept (keeper %d), %d before: want its fds given back", h.KeptFiles(), keeper.n, kept)
	}
	h.Close()
	if keeper.n != 0 || h.KeptFiles() != 0 {
		t.Errorf("after Close: %d fds kept (keeper %d), want 0", h.KeptFiles(), keeper.n)
	}
}

// TestKeptFilesBudget walks a v1 fixture tree whose 4 cgroups have 8
// counter files (usage in each, bandwidth and pressure twins in two) with
// room for 5 fds: 5 are kept, never more, the other 3 are opened and read
// every pass, the listing is the same as without kept files, and a
// steady pass allocates nothing.
func TestKeptFilesBudget(t *testing.T) {
	dir := t.TempDir()
	acct, cpu, v2 := filepath.Join(dir, "cpuacct"), filepath.Join(dir, "cpu"), filepath.Join(dir, "unified")
	for i, rel := range []string{"", "a", "a/b", "c"} {
		mkdir(t, filepath.Join(acct, rel))
		writeFile(t, filepath.Join(acct, rel, threadsFileV1), "1\n2\n")
		writeFile(t, filepath.Join(acct, rel, usageFileV1), string(rune('1'+i))+"2345\n")
	}
	for _, rel := range []string{"", "a"} {
		mkdir(t, filepath.Join(cpu, rel))
		writeFile(t, filepath.Join(cpu, rel, bandwidthFile), "nr_periods 3\nnr_throttled 2\nthrottled_time 1000\nnr_bursts 0\nburst_time 0\n")
	}
	for _, rel := range []string{"", "a/b"} {
		mkdir(t, filepath.Join(v2, rel))
		writeFile(t, filepath.Join(v2, rel, pressureFile), "some avg10=0.00 avg60=0.00 avg300=0.00 total=5\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1\n")
	}
	open := func(k FDKeeper) *Hierarchy {
		h := newHierarchy(layout{version: V1, name: "cpuacct", dir: acct, usage: usageSource{file: usageFileV1}})
		h.useKernelFiles(kernelFiles{bandwidth: kernelFile{file: bandwidthFile, mirror: cpu}, pressure: kernelFile{file: pressureFile, mirror: v2}})
		if k != nil {
			h.KeepFiles(k)
		}
		return h
	}
	var want, got Listing
	if err := open(nil).List(&want); err != nil {
		t.Fatal(err)
	}
	keeper := &countKeeper{max: 5}
	h := open(keeper)
	for range 3 {
		if err := h.List(&got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(kernelRows(&want), kernelRows(&got)); diff != "" || len(got.Cgroups) != 4 || got.Cgroups[2].UsageNanoseconds != 32345 {
			t.Fatalf("listing with kept files (-unkept +kept):\n%s%+v", diff, got.Cgroups)
		}
		if keeper.n != 5 || h.KeptFiles() != 5 {
			t.Fatalf("%d files kept, keeper counts %d: want 5", h.KeptFiles(), keeper.n)
		}
	}
	// A kept file's new contents show at the next pass.
	writeFile(t, filepath.Join(acct, usageFileV1), "99\n")
	if err := h.List(&got); err != nil {
		t.Fatal(err)
	}
	if got.Cgroups[0].UsageNanoseconds != 99 {
		t.Errorf("root usage %d after the file changed to 99", got.Cgroups[0].UsageNanoseconds)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if err := h.List(&got); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("steady pass with kept files: %v allocations, want 0", allocs)
	}
	h.Close()
	if keeper.n != 0 {
		t.Errorf("after Close the keeper counts %d fds, want 0", keeper.n)
	}
}
