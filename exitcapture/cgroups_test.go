package exitcapture

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func inode(t testing.TB, dir string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestCgroupIndex walks a plain directory tree: any directory's inode
// stands in for a cgroup id.
func TestCgroupIndex(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/b", "c"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "a", "cgroup.procs"), nil, 0o644)
	now := time.Unix(1000, 0)
	c := &cgroupIndex{root: root, interval: time.Second, now: func() time.Time { return now }}
	c.scan()

	check := func(id uint64, want string) {
		t.Helper()
		if got, ok := c.path(id); got != want || !ok {
			t.Errorf("path(%d) = %q, %v; want %q, true", id, got, ok, want)
		}
	}
	check(inode(t, root), "/")
	check(inode(t, filepath.Join(root, "a/b")), "/a/b")
	check(inode(t, filepath.Join(root, "c")), "/c")

	// A cgroup made after the walk is found by a new walk, once the
	// interval has passed since the last one; until then the caller is
	// told to wait.
	now = now.Add(300 * time.Millisecond)
	d := filepath.Join(root, "a/new")
	os.Mkdir(d, 0o755)
	if p, ok := c.path(inode(t, d)); ok || c.scans.Load() != 1 {
		t.Errorf("path before the interval = %q, %v after %d walks; want to wait, 1 walk", p, ok, c.scans.Load())
	}
	now = now.Add(700 * time.Millisecond)
	check(inode(t, d), "/a/new")
	if c.scans.Load() != 2 {
		t.Errorf("%d walks, want 2", c.scans.Load())
	}

	// A removed cgroup keeps its last path for one more walk, so the table
	// can credit its nearest ancestor that still exists.
	idC := inode(t, filepath.Join(root, "c"))
	os.Remove(filepath.Join(root, "c"))
	c.scan()
	check(idC, "/c")
	c.scan()
	// Then it is unknown: one more walk finds it missing, and it costs no
	// walk after that.
	now = now.Add(time.Second)
	before := c.scans.Load()
	check(idC, "")
	check(idC, "")
	c.scan()
	check(idC, "")
	if c.scans.Load() != before+2 || c.unknown.Load() != 3 {
		t.Errorf("%d walks and %d unknown, want 2 and 3", c.scans.Load()-before, c.unknown.Load())
	}

	// An unreadable root keeps what the index had.
	c.root = filepath.Join(root, "gone")
	c.scan()
	check(inode(t, filepath.Join(root, "a/b")), "/a/b")
}
