// Package testbpf gives a test a bpf filesystem of its own, standing for
// the host's at /sys/fs/bpf, so that pins made by the code under test
// never touch the node's.
package testbpf

import (
	"testing"

	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"golang.org/x/sys/unix"
)

// Mount mounts a bpf filesystem on a directory of the test's own and
// returns the directory. When the test ends it is unmounted, with every
// pin in it, after the cleanups registered later (LIFO), such as those
// that close what the test opened; detached, as a container of the test
// may still hold a bind mount of it. It needs root.
func Mount(t testing.TB) string {
	t.Helper()
	e2e.RequireRoot(t)
	dir := t.TempDir()
	if err := unix.Mount("bpf", dir, "bpf", 0, "mode=0700"); err != nil {
		t.Fatalf("mount bpffs at %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
