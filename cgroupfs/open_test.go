package cgroupfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// opened is what a Hierarchy reports about itself.
type opened struct {
	Version                Version
	Name, Dir, Unified     string
	ThreadsFile, UsageFile string
}

func describe(h *Hierarchy) opened {
	return opened{h.Version(), h.Name(), h.Dir(), h.UnifiedDir(), h.ThreadsFile(), h.UsageFile()}
}

// requireHybrid fails or skips t unless this machine has the hybrid layout
// the Open table describes: v1 cpu, cpuacct and name=systemd mounts and
// cgroup2 at unified, under a tmpfs at /sys/fs/cgroup.
func requireHybrid(t *testing.T) {
	t.Helper()
	if testcg.PureV2() {
		t.Skipf("pure cgroup v2 machine (%s is cgroup2): the hybrid layout cannot be opened here; TestOpenPureV2 opens this one", sysCgroup)
	}
	for _, c := range []struct {
		dir   string
		magic int64
	}{{"", magicTmpfs}, {"cpu", magicCgroup}, {"cpuacct", magicCgroup}, {"systemd", magicCgroup}, {"unified", magicCgroup2}} {
		if !isFS(filepath.Join(sysCgroup, c.dir), c.magic) {
			e2e.Unavailable(t, "needs the hybrid cgroup layout: "+filepath.Join(sysCgroup, c.dir)+" is not "+fsName(c.magic))
		}
	}
}

func TestOpenHybrid(t *testing.T) {
	requireHybrid(t)
	const (
		acct = sysCgroup + "/cpuacct"
		uni  = sysCgroup + "/unified"
	)
	tests := []struct {
		root, name string
		want       opened
	}{
		{sysCgroup, "", opened{V1, "cpuacct", acct, uni, "tasks", acct + "/cpuacct.usage"}},
		{sysCgroup + "/", "cpuacct", opened{V1, "cpuacct", acct, uni, "tasks", acct + "/cpuacct.usage"}},
		{sysCgroup, "cpu", opened{V1, "cpu", sysCgroup + "/cpu", uni, "tasks", acct + "/cpuacct.usage"}},
		{sysCgroup, "systemd", opened{V1, "systemd", sysCgroup + "/systemd", uni, "tasks", acct + "/cpuacct.usage"}},
		{sysCgroup, "name=systemd", opened{V1, "name=systemd", sysCgroup + "/systemd", uni, "tasks", acct + "/cpuacct.usage"}},
		{sysCgroup, Unified, opened{V2, Unified, uni, uni, "cgroup.threads", uni + "/cpu.stat"}},
		{uni, "", opened{V2, Unified, uni, uni, "cgroup.threads", uni + "/cpu.stat"}},
		{acct, "", opened{V1, "cpuacct", acct, "", "tasks", acct + "/cpuacct.usage"}},
	}
	for _, tt := range tests {
		h, err := Open(tt.root, tt.name)
		if err != nil {
			t.Errorf("Open(%q, %q): %v", tt.root, tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, describe(h)); diff != "" {
			t.Errorf("Open(%q, %q) (-want +got):\n%s", tt.root, tt.name, diff)
		}
	}
}

// TestOpenPureV2 opens the layout of a pure v2 machine, the cgroup2 mount
// at /sys/fs/cgroup: by default and by name it is the unified hierarchy,
// walked from the root, and a v1 name is refused.
func TestOpenPureV2(t *testing.T) {
	if !testcg.PureV2() {
		if e2e.Enabled() && !isFS(filepath.Join(sysCgroup, "unified"), magicCgroup2) {
			t.Fatalf("%s is neither a pure v2 nor a hybrid layout", sysCgroup)
		}
		t.Skipf("hybrid machine: %s is not cgroup2 (TestOpenHybrid opens this layout)", sysCgroup)
	}
	want := opened{V2, Unified, sysCgroup, sysCgroup, "cgroup.threads", sysCgroup + "/cpu.stat"}
	for _, name := range []string{"", Unified} {
		h, err := Open(sysCgroup, name)
		if err != nil {
			t.Errorf("Open(%q, %q): %v", sysCgroup, name, err)
			continue
		}
		if diff := cmp.Diff(want, describe(h)); diff != "" {
			t.Errorf("Open(%q, %q) (-want +got):\n%s", sysCgroup, name, diff)
		}
	}
	for _, name := range []string{"cpuacct", "cpu", "systemd", "no-such-controller"} {
		if h, err := Open(sysCgroup, name); !errors.Is(err, ErrNoHierarchy) {
			t.Errorf("Open(%q, %q) = %v, %v; want %v", sysCgroup, name, h, err, ErrNoHierarchy)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	plain := t.TempDir()
	tests := []struct {
		root, name string
		want       error
		hybrid     bool
	}{
		{root: missing, want: fs.ErrNotExist},
		{root: plain, want: ErrNotCgroup},
		{root: plain, name: "cpuacct", want: ErrNoHierarchy},
		{root: plain, name: Unified, want: ErrNoHierarchy},
		{root: sysCgroup, name: "no-such-controller", want: ErrNoHierarchy, hybrid: true},
		{root: sysCgroup + "/unified", name: "cpuacct", want: ErrNoHierarchy, hybrid: true},
		{root: sysCgroup + "/cpuacct", name: "cpu", want: ErrNoHierarchy, hybrid: true},
	}
	for _, tt := range tests {
		if tt.hybrid && testcg.PureV2() {
			t.Logf("Open(%q, %q): a case of the hybrid layout, not run on this pure v2 machine (TestOpenPureV2 covers its refusals)", tt.root, tt.name)
			continue
		}
		if tt.hybrid {
			requireHybrid(t)
		}
		h, err := Open(tt.root, tt.name)
		if !errors.Is(err, tt.want) {
			t.Errorf("Open(%q, %q) = %v, %v; want error %v", tt.root, tt.name, h, err, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.root) {
			t.Errorf("Open(%q, %q) error %q does not name the root", tt.root, tt.name, err)
		}
	}
}

func TestListRealRoot(t *testing.T) {
	e2e.RequireRoot(t)
	h, err := Open(sysCgroup, "")
	if err != nil {
		t.Fatal(err)
	}
	var l Listing
	before := testproc.Threads(t, os.Getpid())
	if err := h.List(&l); err != nil {
		t.Fatal(err)
	}
	after := testproc.Threads(t, os.Getpid())
	if len(l.Cgroups) == 0 || l.Cgroups[0].Path != "/" || l.Cgroups[0].Parent != -1 || !l.Cgroups[0].HasUsage {
		t.Fatalf("root entry %+v", l.Cgroups[:min(1, len(l.Cgroups))])
	}
	if l.Errors != 0 {
		t.Errorf("%d errors walking %s as root", l.Errors, h.Dir())
	}
	// This test process's threads that lived through the walk are listed
	// once, each in one cgroup.
	seen := make(map[int32]int)
	for _, c := range l.Cgroups {
		for _, tid := range c.TIDs {
			seen[tid]++
		}
	}
	for _, tid := range before {
		if !slices.Contains(after, tid) {
			continue
		}
		if seen[tid] != 1 {
			t.Errorf("thread %d of this test listed %d times", tid, seen[tid])
		}
	}
}
