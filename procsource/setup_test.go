package procsource

import (
	"log/slog"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	if err := Check("/proc"); err != nil {
		t.Errorf("/proc: %v", err)
	}
	dir := t.TempDir()
	if err := Check(dir); err == nil || !strings.Contains(err.Error(), "not a procfs mount") {
		t.Errorf("%s: got %v, want an error saying it is not procfs", dir, err)
	}
	if err := Check(dir + "/missing"); err == nil || !strings.Contains(err.Error(), "--path.procfs") {
		t.Errorf("a missing dir: got %v, want an error naming the flag", err)
	}
}

func TestNew(t *testing.T) {
	o, err := New(Config{Root: "/proc", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if o.Hidden || o.Budget == nil || o.Budget.Max <= 0 || o.Root != "/proc" {
		t.Errorf("opener %+v, budget %+v", o, o.Budget)
	}
}

// TestFDBudget: the budget leaves a reserve of a tenth of the limit, at
// least 64 and at most 1,024 fds.
func TestFDBudget(t *testing.T) {
	for _, tc := range []struct {
		limit uint64
		want  int
	}{{0, 0}, {50, 0}, {1024, 922}, {10000, 9000}, {1 << 20, 1<<20 - 1024}} {
		if got := fdBudget(tc.limit); got != tc.want {
			t.Errorf("fdBudget(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
}

func TestMemoryBudget(t *testing.T) {
	for _, tc := range []struct {
		limit, usage uint64
		want         int
	}{{32 << 20, 8 << 20, (24 << 20) / 8 / KeptFDBytes}, {32 << 20, 40 << 20, 0}, {1 << 30, 0, (1 << 30) / 8 / KeptFDBytes}} {
		if got := memoryBudget(cgroupfs.MemoryLimit{LimitBytes: tc.limit, UsageBytes: tc.usage}); got != tc.want {
			t.Errorf("limit %d usage %d: %d fds, want %d", tc.limit, tc.usage, got, tc.want)
		}
	}
}

func TestSharedBudget(t *testing.T) {
	one, four := SharedBudget(1), SharedBudget(4)
	if one.Max <= 0 || four.Max != one.Max/4 {
		t.Errorf("SharedBudget(1) = %d, SharedBudget(4) = %d: want a positive budget and a quarter of it", one.Max, four.Max)
	}
}

// TestBudgetSharedWithCgroups: cgroup counter files take at most a
// quarter of the budget, tasks the rest and whatever cgroups leave.
func TestBudgetSharedWithCgroups(t *testing.T) {
	b := &FDBudget{Max: 8, CgroupShare: DefaultCgroupShare}
	n := 0
	for b.KeepCgroupFD() {
		n++
	}
	if n != 2 || b.CgroupKept() != 2 {
		t.Fatalf("%d cgroup fds kept of a budget of 8, want 2", n)
	}
	b.kept.Add(6)
	if b.room() {
		t.Error("6 task fds and 2 cgroup fds: the budget of 8 has room left")
	}
	b.ReleaseCgroupFD()
	if !b.room() || b.CgroupKept() != 1 {
		t.Errorf("after a release: room %v, %d cgroup fds", b.room(), b.CgroupKept())
	}
}

// TestBudgetWholeForCgroups: with no share set, as when the task iterator
// is the source and no task keeps an fd, cgroup files take it all.
func TestBudgetWholeForCgroups(t *testing.T) {
	b := &FDBudget{Max: 8}
	n := 0
	for b.KeepCgroupFD() {
		n++
	}
	if n != 8 {
		t.Errorf("%d cgroup fds kept of a budget of 8 with no share, want 8", n)
	}
}
