package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedstat"
)

// fakeProc is the fixtures' fake proc tree (procsource's tests list what
// each task directory holds).
const fakeProc = "../../test/fixtures/schedstat/proc"

// TestReadThreads reads three cgroups' threads as the tasks API does with
// the kernel totals: a readable thread is listed; threads gone (no task,
// no schedstat) and a cgroup removed are left out silently; a thread
// whose files do not parse and a cgroup whose thread list cannot be read
// are left out and counted, with the first error.
func TestReadThreads(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	// 100 reads; 103 has no schedstat and 199 no directory (gone); 102's
	// stat and 104's schedstat do not parse.
	if err := os.WriteFile(filepath.Join(dir, "a", "tasks"), []byte("100\n103\n199\n102\n104\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// b's thread list is a directory: not readable, not gone.
	if err := os.MkdirAll(filepath.Join(dir, "b", "tasks"), 0o755); err != nil {
		t.Fatal(err)
	}
	cgroups := []container.CgroupRef{{ID: 1, Path: "/a"}, {ID: 2, Path: "/b"}, {ID: 3, Path: "/removed"}}
	got, unread, first := readThreads(dir, "tasks", fakeProc, cgroups)
	want := []container.TaskStats{{TID: 100, StartTime: 38975, Stat: schedstat.Stat{RunNanoseconds: 123, WaitNanoseconds: 456, Timeslices: 7}, CgroupID: 1, CgroupPath: "/a"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("threads (-want +got):\n%s", d)
	}
	if unread != 3 || first == nil || !strings.Contains(first.Error(), "thread 102") {
		t.Errorf("unread %d, first error %v; want 3 (threads 102 and 104, the list of /b), the first naming thread 102", unread, first)
	}
}
