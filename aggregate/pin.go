package aggregate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// BPFFSRoot is where a bpf filesystem is mounted by convention, and the
// one place Open mounts one if Options.PinPath lies below it and none is
// mounted there.
const BPFFSRoot = "/sys/fs/bpf"

// pinned are the maps kept in Options.PinPath: what a task ran, waited
// and was scheduled at its last visit, the per-cgroup totals, and the
// iterator's run (which holds credits an interrupted iteration had not
// added to the totals yet). The counts of overflows and exits start anew
// with each source.
var pinned = []string{lastName, totalsName, runName}

// preparePins makes dir, the directory the maps are pinned in, first
// mounting a bpf filesystem at mountAt if dir lies below it and the
// filesystem dir would be on is not one. It reports whether it mounted.
func preparePins(dir, mountAt string) (mounted bool, err error) {
	dir = filepath.Clean(dir)
	if !filepath.IsAbs(dir) {
		return false, fmt.Errorf("pin path %q is not absolute", dir)
	}
	on, err := onBPFFS(existingAncestor(dir))
	if err != nil {
		return false, err
	}
	if !on {
		if mountAt == "" || (dir != mountAt && !strings.HasPrefix(dir, mountAt+"/")) {
			return false, fmt.Errorf("%s is not on a bpf filesystem", dir)
		}
		if err := unix.Mount("bpf", mountAt, "bpf", 0, "mode=0700"); err != nil {
			return false, fmt.Errorf("%s is not on a bpf filesystem, and mounting one at %s failed: %w", dir, mountAt, err)
		}
		mounted = true
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return mounted, fmt.Errorf("pin path: %w", err)
	}
	return mounted, nil
}

// Persistent reports whether pins made at dir would outlive the daemon's
// mount namespace: dir, or its nearest ancestor that exists, is on a bpf
// filesystem mounted already (the host's, or one bind-mounted from it
// into the daemon's container). A bpf filesystem Open mounts itself, in
// a container's own mount namespace, is gone with the container.
func Persistent(dir string) bool {
	if dir == "" || !filepath.IsAbs(dir) {
		return false
	}
	on, err := onBPFFS(existingAncestor(filepath.Clean(dir)))
	return err == nil && on
}

// existingAncestor returns dir or its nearest ancestor that exists.
func existingAncestor(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil || dir == "/" {
			return dir
		}
		dir = filepath.Dir(dir)
	}
}

// onBPFFS reports whether path is on a bpf filesystem.
func onBPFFS(path string) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false, fmt.Errorf("statfs %s: %w", path, err)
	}
	return st.Type == unix.BPF_FS_MAGIC, nil
}

// pinsExist reports whether any of the maps is pinned in dir.
func pinsExist(dir string) bool {
	for _, name := range pinned {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// removePins removes the maps pinned in dir: a map lives on while a
// program or fd holds it, and is freed with the last.
func removePins(dir string) error {
	var errs []error
	for _, name := range pinned {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// pin marks the maps of spec that are kept in the pin path.
func pin(spec *ebpf.CollectionSpec) {
	for _, name := range pinned {
		spec.Maps[name].Pinning = ebpf.PinByName
	}
}

// mapID returns m's kernel id, unique within a boot; 0 if the kernel does
// not say.
func mapID(m *ebpf.Map) uint64 {
	info, err := m.Info()
	if err != nil {
		return 0
	}
	id, ok := info.ID()
	if !ok {
		return 0
	}
	return uint64(id)
}
