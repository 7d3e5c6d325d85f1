package cgroupfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/cgroups"
	"github.com/schedstatd/schedstatd/internal/e2e"
	"golang.org/x/sys/unix"
)

// sysCgroup is the machine's cgroup root, where the tests make real cgroups.
const sysCgroup = "/sys/fs/cgroup"

// testCgroupSeq numbers the test cgroups of this process.
var testCgroupSeq atomic.Int64

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

// makeCgroups makes a test cgroup with a unique name in the hierarchy at
// hdir, and the cgroups rels below it ("a", "a/b"), and returns its name.
// t's cleanup moves any process left in them to the hierarchy root and
// removes them, deepest first, even when the test fails.
func makeCgroups(t testing.TB, hdir string, rels ...string) string {
	t.Helper()
	return makeCgroupsNamed(t, hdir, fmt.Sprintf("schedstatd-test-%d-%d", os.Getpid(), testCgroupSeq.Add(1)), rels...)
}

// makeCgroupsNamed is makeCgroups with the test cgroup's name given, to
// make the same tree in a second hierarchy.
func makeCgroupsNamed(t testing.TB, hdir, name string, rels ...string) string {
	t.Helper()
	top := filepath.Join(hdir, name)
	t.Cleanup(func() { removeCgroups(t, hdir, top) })
	for _, rel := range append([]string{""}, rels...) {
		if err := os.Mkdir(filepath.Join(top, rel), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

// removeCgroups moves the processes in top and below to hdir and removes
// the cgroups, deepest first.
func removeCgroups(t testing.TB, hdir, top string) {
	var dirs []string
	_ = filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, dir := range dirs {
		pids, _ := cgroups.GetPids(dir)
		for _, pid := range pids {
			_ = cgroups.WriteCgroupProc(hdir, pid)
		}
	}
	if err := cgroups.RemovePath(top); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("removing test cgroups: %v", err)
	}
}

// moveTo moves every thread of process pid into the cgroup dir.
func moveTo(t *testing.T, dir string, pid int) {
	t.Helper()
	if err := cgroups.WriteCgroupProc(dir, pid); err != nil {
		t.Fatal(err)
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
