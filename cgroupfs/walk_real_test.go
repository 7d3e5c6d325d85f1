package cgroupfs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"golang.org/x/sys/unix"
)

// realCase is a hierarchy the real tests run in: Open's name for it, and
// the hierarchy holding its counters (the cpuacct twin for cpu), or "".
var realCases = []struct {
	name    string
	counter string
}{
	{name: "cpuacct", counter: "cpuacct"},
	{name: "cpu", counter: "cpuacct"},
	{name: Unified, counter: Unified},
}

// got is a test cgroup's entry as the real tests compare it.
type got struct {
	Parent   string
	TIDs     []int32
	HasUsage bool
	Err      error
}

func TestListRealNested(t *testing.T) {
	for _, rc := range realCases {
		t.Run(rc.name, func(t *testing.T) {
			hdir := realHierarchy(t, rc.name)
			cdir := realHierarchy(t, rc.counter)
			rels := []string{"a", "a/b", "a/b/c", "d"}
			top := makeCgroups(t, hdir, rels...)
			if cdir != hdir {
				makeTwin(t, cdir, top, rels...)
			}
			helpers := map[string]*testproc.Proc{"/a": testproc.Start(t, 3, nil), "/a/b/c": testproc.Start(t, 5, nil), "/d": testproc.Start(t, 1, nil)}
			for rel, h := range helpers {
				testcg.Move(t, filepath.Join(hdir, top, rel), h.PID)
				if cdir != hdir {
					testcg.Move(t, filepath.Join(cdir, top, rel), h.PID)
				}
			}
			want := map[string]got{
				"":       {Parent: "/", HasUsage: true},
				"/a":     {Parent: "/" + top, HasUsage: true},
				"/a/b":   {Parent: "/" + top + "/a", HasUsage: true},
				"/a/b/c": {Parent: "/" + top + "/a/b", HasUsage: true},
				"/d":     {Parent: "/" + top, HasUsage: true},
			}
			for rel, h := range helpers {
				h.Stop(t)
				w := want[rel]
				w.TIDs = slices.Sorted(slices.Values(h.Threads(t)))
				want[rel] = w
			}

			h, err := Open(sysCgroup, rc.name)
			if err != nil {
				t.Fatal(err)
			}
			if h.Dir() != hdir {
				t.Errorf("Open walks %s, want %s", h.Dir(), hdir)
			}
			var l Listing
			for pass := range 2 {
				if err := h.List(&l); err != nil {
					t.Fatal(err)
				}
				gotRows := make(map[string]got)
				for rel, c := range subtree(&l, top) {
					tids := slices.Clone(c.TIDs)
					slices.Sort(tids)
					gotRows[rel] = got{Parent: l.Cgroups[c.Parent].Path, TIDs: tids, HasUsage: c.HasUsage, Err: c.Err}
				}
				if diff := cmp.Diff(want, gotRows, cmpEmptyNil, cmpErrors); diff != "" {
					t.Errorf("pass %d: test cgroups (-want +got):\n%s", pass, diff)
				}
			}
		})
	}
}

// TestListTreeReal: ListTree lists the same cgroups as List, each with the
// inode number of its directory as ID and its counter, and no threads,
// though threads are there to list.
func TestListTreeReal(t *testing.T) {
	for _, rc := range realCases {
		t.Run(rc.name, func(t *testing.T) {
			hdir := realHierarchy(t, rc.name)
			cdir := realHierarchy(t, rc.counter)
			rels := []string{"a", "a/b"}
			top := makeCgroups(t, hdir, rels...)
			if cdir != hdir {
				makeTwin(t, cdir, top, rels...)
			}
			p := testproc.Start(t, 2, nil)
			testcg.Move(t, filepath.Join(hdir, top, "a/b"), p.PID)
			h, err := Open(sysCgroup, rc.name)
			if err != nil {
				t.Fatal(err)
			}
			var full, tree Listing
			if err := h.List(&full); err != nil {
				t.Fatal(err)
			}
			if err := h.ListTree(&tree); err != nil {
				t.Fatal(err)
			}
			if n := len(subtree(&full, top)["/a/b"].TIDs); n < 3 {
				t.Fatalf("List found %d threads in /a/b, want the helper's 3 or more", n)
			}
			// Only the test's own cgroups: other tests make and remove
			// theirs in the same hierarchy meanwhile.
			paths := func(l *Listing) []string {
				var ps []string
				for rel := range subtree(l, top) {
					ps = append(ps, rel)
				}
				return ps
			}
			if diff := cmp.Diff(paths(&full), paths(&tree), cmpSorted); diff != "" {
				t.Errorf("ListTree lists other cgroups than List (-List +ListTree):\n%s", diff)
			}
			for rel, c := range subtree(&tree, top) {
				var st unix.Stat_t
				if err := unix.Stat(filepath.Join(hdir, top, rel), &st); err != nil {
					t.Fatal(err)
				}
				if c.ID != st.Ino {
					t.Errorf("%q: ID %d, want the directory's inode %d", rel, c.ID, st.Ino)
				}
				if len(c.TIDs) != 0 || !c.HasUsage || c.Err != nil {
					t.Errorf("%q: %d threads, usage read %v, err %v; want none, true, nil", rel, len(c.TIDs), c.HasUsage, c.Err)
				}
				if id := subtree(&full, top)[rel].ID; id != c.ID {
					t.Errorf("%q: List gives ID %d, ListTree %d", rel, id, c.ID)
				}
			}
		})
	}
}

// cmpErrors compares errors by message.
var cmpErrors = cmp.Comparer(func(a, b error) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error())
})

// TestListRealLeafChanges checks that a cgroup without children, which the
// walk does not open as a directory, is listed again once it has some,
// and forgets them when they go.
func TestListRealLeafChanges(t *testing.T) {
	for _, name := range []string{"cpuacct", Unified} {
		t.Run(name, func(t *testing.T) {
			hdir := realHierarchy(t, name)
			top := makeCgroups(t, hdir, "a")
			h, err := Open(sysCgroup, name)
			if err != nil {
				t.Fatal(err)
			}
			var l Listing
			steps := []struct {
				change func() error
				want   []string
			}{
				{func() error { return nil }, []string{"", "/a"}},
				{func() error { return os.Mkdir(filepath.Join(hdir, top, "a", "b"), 0o755) }, []string{"", "/a", "/a/b"}},
				{func() error { return os.Mkdir(filepath.Join(hdir, top, "a", "b", "c"), 0o755) }, []string{"", "/a", "/a/b", "/a/b/c"}},
				{func() error {
					return errors.Join(os.Remove(filepath.Join(hdir, top, "a", "b", "c")), os.Remove(filepath.Join(hdir, top, "a", "b")))
				}, []string{"", "/a"}},
			}
			for i, s := range steps {
				if err := s.change(); err != nil {
					t.Fatal(err)
				}
				if err := h.List(&l); err != nil {
					t.Fatal(err)
				}
				var got []string
				for rel := range subtree(&l, top) {
					got = append(got, rel)
				}
				if diff := cmp.Diff(s.want, got, cmpSorted); diff != "" {
					t.Errorf("step %d: test cgroups (-want +got):\n%s", i, diff)
				}
			}
			if a := h.w.root.kids[top].kids["a"]; a == nil || len(a.kids) != 0 {
				t.Errorf("cached node of /a after its children went: %+v", a)
			}
		})
	}
}
