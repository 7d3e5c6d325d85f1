package cgroupfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// row is a Cgroup as the fixture tests compare it: the parent by path, the
// error by kind.
type row struct {
	Path, Parent string
	TIDs         []int32
	Usage        uint64
	HasUsage     bool
	Err          string // "", "parse" (wraps ErrParse), "missing" (fs.ErrNotExist), or the message
}

// rows turns l into rows, checking that parents come first.
func rows(t *testing.T, l *Listing) []row {
	t.Helper()
	out := make([]row, 0, len(l.Cgroups))
	errs := 0
	for i, c := range l.Cgroups {
		r := row{Path: c.Path, TIDs: c.TIDs, Usage: c.UsageNanoseconds, HasUsage: c.HasUsage}
		switch {
		case i == 0 && c.Parent != -1, i > 0 && (c.Parent < 0 || c.Parent >= i):
			t.Errorf("cgroup %d %s has parent %d", i, c.Path, c.Parent)
		case i > 0:
			r.Parent = l.Cgroups[c.Parent].Path
		}
		switch {
		case c.Err == nil:
		case errors.Is(c.Err, ErrParse):
			r.Err = "parse"
		case errors.Is(c.Err, fs.ErrNotExist):
			r.Err = "missing"
		default:
			r.Err = c.Err.Error()
		}
		if c.Err != nil {
			errs++
		}
		out = append(out, r)
	}
	if errs != l.Errors {
		t.Errorf("Listing.Errors = %d, but %d cgroups have Err set", l.Errors, errs)
	}
	return out
}

func TestListFixtureV2(t *testing.T) {
	const (
		pod1 = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod6c2a7f1e_3b4d_4e5f_8a9b_0c1d2e3f4a5b.slice"
		pod2 = "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podd4e5f6a7_b8c9_4d0e_9f1a_2b3c4d5e6f70.slice"
		app  = pod1 + "/cri-containerd-a172cedcae47474b615c54d510a5d84a8dea3032e958587430b413538be3f333.scope"
		side = pod1 + "/cri-containerd-6c8b4535ccc87f19061c4646189e33d78f01c8b63dc4e3cb2f630b1796ee93b6.scope"
		crio = pod2 + "/crio-610713dca419d7deb83a1246d0c1ee0ac2e23b81cbb29bba37147e88e1848cda.scope"
	)
	want := []row{
		{Path: "/", TIDs: []int32{1, 2, 3}, Usage: 9e9, HasUsage: true},
		{Path: "/kubepods.slice", Parent: "/", Usage: 5e9, HasUsage: true},
		{Path: "/kubepods.slice/kubepods-besteffort.slice", Parent: "/kubepods.slice", Usage: 2e9, HasUsage: true},
		{Path: pod2, Parent: "/kubepods.slice/kubepods-besteffort.slice", Usage: 2e9, HasUsage: true},
		{Path: crio, Parent: pod2, Usage: 2e9, HasUsage: true, Err: "parse"},
		{Path: "/kubepods.slice/kubepods-burstable.slice", Parent: "/kubepods.slice", Usage: 3e9, HasUsage: true},
		{Path: pod1, Parent: "/kubepods.slice/kubepods-burstable.slice", Usage: 3e9, HasUsage: true},
		{Path: side, Parent: pod1, TIDs: []int32{1301, 1302}, Usage: 5e8, HasUsage: true},
		{Path: app, Parent: pod1, TIDs: []int32{1201, 1202, 1203}, Usage: 25e8, HasUsage: true},
		{Path: "/system.slice", Parent: "/", Usage: 4e9, HasUsage: true},
		{Path: "/system.slice/containerd.service", Parent: "/system.slice", TIDs: []int32{950}, Usage: 1e9, HasUsage: true},
		{Path: "/system.slice/kubelet.service", Parent: "/system.slice", TIDs: []int32{900, 901}, Err: "missing"},
	}
	h := newHierarchy(fixtureLayout(t, "v2", V2, cpuStatUsage))
	var l Listing
	for pass := range 2 {
		if err := h.List(&l); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, rows(t, &l), cmpEmptyNil); diff != "" {
			t.Errorf("pass %d (-want +got):\n%s", pass, diff)
		}
	}
}

func TestListFixtureV1(t *testing.T) {
	const (
		pod1  = "/kubepods/burstable/pod6c2a7f1e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
		pod2  = "/kubepods/podd4e5f6a7-b8c9-4d0e-9f1a-2b3c4d5e6f70"
		app   = pod1 + "/a172cedcae47474b615c54d510a5d84a8dea3032e958587430b413538be3f333"
		side  = pod2 + "/6c8b4535ccc87f19061c4646189e33d78f01c8b63dc4e3cb2f630b1796ee93b6"
		web   = "/docker/f31f384749f9115acf01fcf82f5a966b59dcc0a4cbd7c9740888c0bf32aa2bbb"
		usage = true
	)
	cpuacct := []row{
		{Path: "/", TIDs: []int32{1, 2}, Usage: 9e8, HasUsage: usage},
		{Path: "/docker", Parent: "/", Usage: 4e8, HasUsage: usage},
		{Path: web, Parent: "/docker", TIDs: []int32{2401, 2402, 2403}, Usage: 4e8, HasUsage: usage},
		{Path: "/kubepods", Parent: "/", Usage: 5e8, HasUsage: usage},
		{Path: "/kubepods/burstable", Parent: "/kubepods", Usage: 3e8, HasUsage: usage},
		{Path: pod1, Parent: "/kubepods/burstable", Usage: 3e8, HasUsage: usage},
		{Path: app, Parent: pod1, TIDs: []int32{2201, 2202}, Usage: 3e8, HasUsage: usage},
		{Path: pod2, Parent: "/kubepods", Usage: 2e8, HasUsage: usage},
		{Path: side, Parent: pod2, Usage: 2e8, HasUsage: usage, Err: "parse"},
		{Path: "/system.slice", Parent: "/", HasUsage: usage, Err: "missing"},
	}
	cpu := []row{
		{Path: "/", TIDs: []int32{1, 2}, Usage: 9e8, HasUsage: usage},
		{Path: "/cpu-only", Parent: "/", TIDs: []int32{3001}},
		{Path: "/kubepods", Parent: "/", Usage: 5e8, HasUsage: usage},
		{Path: pod2, Parent: "/kubepods", Usage: 2e8, HasUsage: usage},
	}
	tests := []struct {
		name  string
		dir   string
		usage usageSource
		want  []row
	}{
		{"cpuacct", "v1/cpuacct", usageSource{file: usageFileV1}, cpuacct},
		{"cpu with cpuacct counters", "v1/cpu", usageSource{file: usageFileV1, mirror: "v1/cpuacct"}, cpu},
		{"cpu without counters", "v1/cpu", usageSource{}, withoutUsage(cpu)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHierarchy(fixtureLayout(t, tt.dir, V1, tt.usage))
			var l Listing
			if err := h.List(&l); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, rows(t, &l), cmpEmptyNil); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// withoutUsage returns a copy of rs with no counters.
func withoutUsage(rs []row) []row {
	out := append([]row(nil), rs...)
	for i := range out {
		out[i].Usage, out[i].HasUsage = 0, false
	}
	return out
}

func TestListRootErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name  string
		setup func(t *testing.T, root string)
	}{
		{"missing root", func(t *testing.T, root string) {}},
		{"root without threads file", func(t *testing.T, root string) {
			mkdir(t, root)
			writeFile(t, filepath.Join(root, usageFileV2), "usage_usec 1\n")
		}},
		{"malformed root threads", func(t *testing.T, root string) {
			mkdir(t, root)
			writeFile(t, filepath.Join(root, threadsFileV2), "1\nx\n")
			writeFile(t, filepath.Join(root, usageFileV2), "usage_usec 1\n")
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(dir, strconv.Itoa(i))
			tt.setup(t, root)
			h := newHierarchy(layout{version: V2, name: Unified, dir: root, usage: cpuStatUsage})
			l := Listing{Cgroups: []Cgroup{{Path: "/stale"}}}
			err := h.List(&l)
			if err == nil {
				t.Fatalf("List gave no error; listing %+v", l.Cgroups)
			}
			if len(l.Cgroups) != 0 {
				t.Errorf("List failed with %v but left %d cgroups", err, len(l.Cgroups))
			}
			if !strings.Contains(err.Error(), root) {
				t.Errorf("error %q does not name %s", err, root)
			}
		})
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixtureLayout returns the layout of the fixture hierarchy dir (such as
// "v2" or "v1/cpuacct") walked as version v with its counters in usage.
func fixtureLayout(t testing.TB, dir string, v Version, usage usageSource) layout {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join(fixtureDir, dir))
	if err != nil {
		t.Fatal(err)
	}
	if usage.mirror != "" {
		if usage.mirror, err = filepath.Abs(filepath.Join(fixtureDir, usage.mirror)); err != nil {
			t.Fatal(err)
		}
	}
	name := filepath.Base(dir)
	if v == V2 {
		name = Unified
	}
	return layout{version: v, name: name, dir: abs, usage: usage}
}
