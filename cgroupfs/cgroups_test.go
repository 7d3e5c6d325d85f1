package cgroupfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"golang.org/x/sys/unix"
)

// sysCgroup is the machine's cgroup root, where the tests make real cgroups.
const sysCgroup = testcg.Root

// realHierarchy returns the directory of the hierarchy name ("cpuacct",
// "cpu", Unified) on this machine, after checking it is mounted and that
// the test runs as root. A pure v2 machine has no v1 hierarchies, and
// there a v1 name skips the test; the unified hierarchy is then the root.
func realHierarchy(t testing.TB, name string) string {
	t.Helper()
	e2e.RequireRoot(t)
	dir := filepath.Join(sysCgroup, name)
	want := int64(magicCgroup)
	if name == Unified {
		want = magicCgroup2
		if isFS(sysCgroup, magicCgroup2) {
			dir = sysCgroup
		}
	}
	if !isFS(dir, want) {
		t.Skipf("no %s hierarchy at %s on this machine", name, dir)
	}
	return dir
}

// isFS reports whether path is on a filesystem of type magic.
func isFS(path string, magic int64) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == magic
}

// makeCgroups makes a test cgroup with testcg.Make in the hierarchy at
// hdir, and the cgroups rels below it ("a", "a/b"), and returns its name.
// testcg removes them when t ends, pass or fail, moving any process left
// in them to the hierarchy root first.
func makeCgroups(t testing.TB, hdir string, rels ...string) string {
	t.Helper()
	hierarchy, err := filepath.Rel(testcg.Root, hdir)
	if err != nil {
		t.Fatal(err)
	}
	if hierarchy == "." { // the root of a pure v2 machine
		hierarchy = Unified
	}
	top := testcg.Make(t, hierarchy)
	mkdirs(t, top, rels)
	return filepath.Base(top)
}

// makeTwin makes the test cgroup name, which makeCgroups made in another
// hierarchy, and the cgroups rels below it in the hierarchy at hdir too,
// so that the tree has the same paths in both (cpu and its cpuacct twin
// on v1). testcg.Remove removes them when t ends, as makeCgroups' own.
func makeTwin(t testing.TB, hdir, name string, rels ...string) {
	t.Helper()
	top := filepath.Join(hdir, name)
	t.Cleanup(func() { testcg.Remove(t, hdir, top) })
	mkdirs(t, top, append([]string{""}, rels...))
}

// mkdirs makes the directories rels below dir in their order, which
// names parents before their children.
func mkdirs(t testing.TB, dir string, rels []string) {
	t.Helper()
	for _, rel := range rels {
		if err := os.Mkdir(filepath.Join(dir, rel), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// subtree returns the entries of l at or below the cgroup /name, keyed by
// path relative to it ("" for /name itself).
func subtree(l *Listing, name string) map[string]Cgroup {
	out := make(map[string]Cgroup)
	for _, c := range l.Cgroups {
		if rel, ok := strings.CutPrefix(c.Path, "/"+name); ok && (rel == "" || rel[0] == '/') {
			out[rel] = c
		}
	}
	return out
}
