package container_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/e2e"
	"github.com/schedstatd/schedstatd/internal/testproc"
	"github.com/schedstatd/schedstatd/schedstat"
)

func TestMain(m *testing.M) {
	testproc.Main()
	os.Exit(m.Run())
}

var cgroupSeq atomic.Int32

// makeCgroup creates a cgroup under the v1 hierarchy (or "unified") named
// hierarchy, and removes it when the test ends, moving any task left in it
// to the hierarchy root first.
func makeCgroup(t *testing.T, hierarchy string) string {
	t.Helper()
	e2e.RequireRoot(t)
	root := filepath.Join("/sys/fs/cgroup", hierarchy)
	if _, err := os.Stat(root); err != nil {
		e2e.Unavailable(t, "no cgroup hierarchy at "+root)
	}
	dir := filepath.Join(root, fmt.Sprintf("schedstatd-test-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeCgroup(t, root, dir) })
	return dir
}

// removeCgroup removes dir and its children, deepest first.
func removeCgroup(t *testing.T, root, dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			removeCgroup(t, root, filepath.Join(dir, e.Name()))
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, pid := range readIDs(t, filepath.Join(dir, "cgroup.procs")) {
			os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(strconv.Itoa(int(pid))), 0)
		}
		err := os.Remove(dir)
		if err == nil || os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("remove %s: %v", dir, err)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// moveInto writes pid to the cgroup's cgroup.procs, moving all its threads.
func moveInto(t *testing.T, dir string, pid int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		t.Fatalf("move %d into %s: %v", pid, dir, err)
	}
}

// readIDs reads a file of decimal ids, one a line.
func readIDs(t *testing.T, path string) []int32 {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var ids []int32
	for _, f := range strings.Fields(string(b)) {
		id, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		ids = append(ids, int32(id))
	}
	return ids
}

// dirLister lists real v1 cgroup directories as a tree: dirs[0] is "/",
// every other one a child of it named by its base name. It reads each
// directory's tasks file, as the cgroupfs walker does on v1.
type dirLister struct {
	t    *testing.T
	dirs []string
}

func (d *dirLister) List(l *cgroupfs.Listing) error {
	l.Reset()
	for i, dir := range d.dirs {
		path, parent := "/", -1
		if i > 0 {
			path, parent = "/"+filepath.Base(dir), 0
		}
		c := l.Add(path, parent)
		c.TIDs = append(c.TIDs, readIDs(d.t, filepath.Join(dir, "tasks"))...)
		if b, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage")); err == nil {
			if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
				c.UsageNanoseconds, c.HasUsage = n, true
			}
		}
	}
	return nil
}

// kernelStat reads /proc/<pid>/task/<tid>/schedstat directly.
func kernelStat(t *testing.T, pid int, tid int32) schedstat.Stat {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, tid))
	if err != nil {
		t.Fatal(err)
	}
	s, err := schedstat.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sumStats sums the kernel's counters over every thread of pid.
func sumStats(t *testing.T, p *testproc.Proc) schedstat.Stat {
	t.Helper()
	var sum schedstat.Stat
	for _, tid := range p.Threads(t) {
		sum = sum.Add(kernelStat(t, p.PID, tid))
	}
	return sum
}
