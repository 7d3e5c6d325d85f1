package cgroupfs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// plainTree makes a v2-shaped tree of plain files under dir: the root and
// the cgroups at rels, each with a cgroup.threads of n ids and a cpu.stat.
func plainTree(t testing.TB, dir string, rels []string, n int) {
	t.Helper()
	for _, rel := range append([]string{"/"}, rels...) {
		d := filepath.Join(dir, rel)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		var ids strings.Builder
		for i := range n {
			fmt.Fprintf(&ids, "%d\n", 1000+i)
		}
		for name, data := range map[string]string{threadsFileV2: ids.String(), usageFileV2: "usage_usec 7\n"} {
			if err := os.WriteFile(filepath.Join(d, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// paths returns the paths in l, in order.
func paths(l *Listing) []string {
	var out []string
	for _, c := range l.Cgroups {
		out = append(out, c.Path)
	}
	return out
}

func TestListFollowsChanges(t *testing.T) {
	dir := t.TempDir()
	plainTree(t, dir, []string{"/a", "/a/x", "/b", "/c"}, 2)
	h := newHierarchy(layout{version: V2, name: Unified, dir: dir, usage: cpuStatUsage})
	var l Listing
	if err := h.List(&l); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/", "/a", "/a/x", "/b", "/c"}, paths(&l)); diff != "" {
		t.Fatalf("first pass (-want +got):\n%s", diff)
	}
	if err := os.RemoveAll(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	plainTree(t, dir, []string{"/b/y", "/d"}, 1)
	if err := h.List(&l); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/", "/b", "/b/y", "/c", "/d"}, paths(&l)); diff != "" {
		t.Errorf("second pass (-want +got):\n%s", diff)
	}
	var cached []string
	for name := range h.w.root.kids {
		cached = append(cached, name)
	}
	if diff := cmp.Diff([]string{"b", "c", "d"}, cached, cmpSorted); diff != "" {
		t.Errorf("cached children of the root (-want +got):\n%s", diff)
	}
}

// cmpSorted compares string slices as sets.
var cmpSorted = cmp.Transformer("sort", func(s []string) []string {
	out := append([]string(nil), s...)
	slices.Sort(out)
	return out
})

func TestListShrinksCache(t *testing.T) {
	dir := t.TempDir()
	var rels []string
	for i := range 200 {
		rels = append(rels, fmt.Sprintf("/pod%d", i))
	}
	plainTree(t, dir, rels, 0)
	h := newHierarchy(layout{version: V2, name: Unified, dir: dir, usage: cpuStatUsage})
	var l Listing
	if err := h.List(&l); err != nil {
		t.Fatal(err)
	}
	for _, rel := range rels[10:] {
		if err := os.RemoveAll(filepath.Join(dir, rel)); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.List(&l); err != nil {
		t.Fatal(err)
	}
	if got := len(l.Cgroups); got != 11 {
		t.Errorf("listed %d cgroups, want 11", got)
	}
	if n := h.w.root; len(n.kids) != 10 || n.peak != 10 {
		t.Errorf("root node holds %d children, peak %d; want a rebuilt map of 10", len(n.kids), n.peak)
	}
}

func TestListSteadyStateAllocs(t *testing.T) {
	dir := t.TempDir()
	var rels []string
	for i := range 20 {
		rels = append(rels, fmt.Sprintf("/slice%d", i%4), fmt.Sprintf("/slice%d/unit%d", i%4, i))
	}
	plainTree(t, dir, rels, 50)
	h := newHierarchy(layout{version: V2, name: Unified, dir: dir, usage: cpuStatUsage})
	var l Listing
	if err := h.List(&l); err != nil {
		t.Fatal(err)
	}
	for _, list := range []struct {
		name string
		f    func(*Listing) error
	}{{"List", h.List}, {"ListTree", h.ListTree}} {
		allocs := testing.AllocsPerRun(20, func() {
			if err := list.f(&l); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("steady-state %s of %d cgroups: %v allocations, want 0", list.name, len(l.Cgroups), allocs)
		}
	}
}
