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

	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"golang.org/x/sys/unix"
)

// Root is where cgroup hierarchies are mounted on the test machine.
const Root = "/sys/fs/cgroup"

// Unified names the v2 hierarchy, as cgroupfs.Unified does.
const Unified = "unified"

var seq atomic.Int32

// PureV2 reports whether Root is itself a cgroup2 mount: a pure cgroup v2
// machine, with no v1 hierarchy (the kernel matrix's VMs, most Kubernetes
// nodes), rather than a hybrid one with v1 controllers beside cgroup2 at
// Root/unified.
func PureV2() bool {
	var st unix.Statfs_t
	return unix.Statfs(Root, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

// Dir returns the mount of hierarchy ("cpuacct", "unified", ...):
// Root/hierarchy, or Root itself for the unified hierarchy of a pure v2
// machine.
func Dir(hierarchy string) string {
	if hierarchy == Unified && PureV2() {
		return Root
	}
	return filepath.Join(Root, hierarchy)
}

// Default returns the hierarchy the daemon walks by itself on this
// machine: v1 cpuacct on a hybrid machine, the unified one on a pure v2
// machine. Tests that need a real cgroup but are about no one hierarchy
// make theirs there.
func Default() string {
	if PureV2() {
		return Unified
	}
	return "cpuacct"
}

// Require skips t, saying why, when hierarchy is a v1 one ("cpuacct",
// "cpu", ...; "" is the default one, always there) and this is a pure v2 machine, where no v1 hierarchy can
// exist (the kernel runs with every v1 controller disabled). The skip is
// the explicit, reported decision that the test is about v1. Elsewhere it
// does nothing: a hierarchy that should be there and is not fails the test
// where it is opened.
func Require(t testing.TB, hierarchy string) {
	t.Helper()
	if hierarchy != Unified && hierarchy != "" && PureV2() {
		t.Skipf("pure cgroup v2 machine (%s is cgroup2): no v1 %s hierarchy to test", Root, hierarchy)
	}
}

// Make creates a cgroup under the hierarchy mounted at Dir(hierarchy)
// ("cpuacct", "cpu", "unified", ...) and returns its directory. It needs
// root: without it the test skips, or fails under SCHEDSTATD_E2E=1. A v1
// hierarchy on a pure v2 machine skips the test (see Require).
func Make(t testing.TB, hierarchy string) string {
	t.Helper()
	e2e.RequireRoot(t)
	Require(t, hierarchy)
	root := Dir(hierarchy)
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

// Threads reads the ids of the threads in the cgroup at dir: its v1 tasks
// file, or its v2 cgroup.threads.
func Threads(t testing.TB, dir string) []int32 {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "tasks")); err == nil {
		return ReadIDs(t, filepath.Join(dir, "tasks"))
	}
	return ReadIDs(t, filepath.Join(dir, "cgroup.threads"))
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
