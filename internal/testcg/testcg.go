// Package testcg makes real cgroups for tests and removes them, with any
// task left in them moved out first, when the test ends, pass or fail.
package testcg

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/e2e"
)

// Root is where cgroup hierarchies are mounted on the test machine.
const Root = "/sys/fs/cgroup"

var seq atomic.Int32

// Make creates a cgroup under the hierarchy mounted at Root/hierarchy
// ("cpuacct", "cpu", "unified", ...) and returns its directory. It needs
// root: without it the test skips, or fails under SCHEDSTATD_E2E=1.
func Make(t testing.TB, hierarchy string) string {
	t.Helper()
	e2e.RequireRoot(t)
	root := filepath.Join(Root, hierarchy)
	if _, err := os.Stat(root); err != nil {
		e2e.Unavailable(t, "no cgroup hierarchy at "+root)
	}
	dir := filepath.Join(root, fmt.Sprintf("schedstatd-test-%d-%d", os.Getpid(), seq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Remove(t, root, dir) })
	return dir
}

// Remove removes dir and its children, deepest first, moving their tasks
// to root.
func Remove(t testing.TB, root, dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			Remove(t, root, filepath.Join(dir, e.Name()))
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, pid := range ReadIDs(t, filepath.Join(dir, "cgroup.procs")) {
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

// Move writes pid to the cgroup's cgroup.procs, moving all its threads.
func Move(t testing.TB, dir string, pid int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		t.Fatalf("move %d into %s: %v", pid, dir, err)
	}
}

// ReadIDs reads a file of decimal ids, one a line; a missing file gives
// none.
func ReadIDs(t testing.TB, path string) []int32 {
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

// Usage reads the cgroup's own CPU counter in nanoseconds: cpuacct.usage
// on v1, cpu.stat usage_usec on v2.
func Usage(t testing.TB, dir string) uint64 {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage")); err == nil {
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n * 1000
		}
	}
	t.Fatalf("%s/cpu.stat has no usage_usec", dir)
	return 0
}
