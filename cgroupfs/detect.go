package cgroupfs

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"
)

// Filesystem magic numbers, as statfs reports them in f_type.
const (
	magicCgroup2 = unix.CGROUP2_SUPER_MAGIC
	magicCgroup  = unix.CGROUP_SUPER_MAGIC
	magicTmpfs   = unix.TMPFS_MAGIC
)

// autoOrder is the v1 hierarchies Open tries, in order, when none is
// named: cpuacct holds the oracle counter and is where kubelet puts
// containers on v1 nodes; cpu and name=systemd follow the same layout.
var autoOrder = []string{"cpuacct", "cpu", "systemd"}

// probe is how detection looks at the filesystem. Open uses the real one;
// tests pass fakes to cover layouts this machine does not have.
type probe struct {
	// fsType returns statfs's f_type for path.
	fsType func(path string) (int64, error)
	// exists reports whether path exists.
	exists func(path string) bool
	// mountpoint finds the mount of the v1 subsystem (such as
	// "name=systemd") below root from mountinfo, for combined mounts such
	// as "cpu,cpuacct" that have no directory of the subsystem's name.
	mountpoint func(root, subsystem string) (string, error)
}

// osProbe is the probe on the running system.
var osProbe = probe{
	fsType: func(path string) (int64, error) {
		var st unix.Statfs_t
		if err := unix.Statfs(path, &st); err != nil {
			return 0, err
		}
		return st.Type, nil
	},
	exists: func(path string) bool {
		return unix.Access(path, unix.F_OK) == nil
	},
	mountpoint: func(root, subsystem string) (string, error) {
		if cgroups.IsCgroup2UnifiedMode() {
			return "", ErrNoHierarchy
		}
		return cgroups.FindCgroupMountpoint(root, subsystem)
	},
}

// layout is what detection found: the hierarchy to walk and where its
// files are.
type layout struct {
	version Version
	name    string // as Open reports it: "unified", "cpuacct", ...
	dir     string // the hierarchy's root directory, walked
	unified string // the v2 mount, "" when there is none
	usage   usageSource
	kernfs  bool // dir was checked to be a cgroup mount
}

// detect finds the hierarchy name (or, if name is "", the default one) under
// root, an absolute path.
func detect(root, name string, p probe) (layout, error) {
	t, err := p.fsType(root)
	if err != nil {
		return layout{}, fmt.Errorf("cgroupfs: root %s: %w", root, err)
	}
	if t == magicCgroup2 {
		if name != "" && name != Unified {
			return layout{}, fmt.Errorf("cgroupfs: %s is a cgroup2 mount, with no v1 hierarchy %q: %w", root, name, ErrNoHierarchy)
		}
		return v2Layout(root), nil
	}
	if t == magicCgroup && name == "" {
		return v1Layout(filepath.Base(root), root, "", p), nil
	}
	unified := filepath.Join(root, Unified)
	if t, err := p.fsType(unified); err != nil || t != magicCgroup2 {
		unified = ""
	}
	switch {
	case name == Unified && unified != "":
		return v2Layout(unified), nil
	case name == Unified:
		return layout{}, fmt.Errorf("cgroupfs: no cgroup2 mount at %s: %w", filepath.Join(root, Unified), ErrNoHierarchy)
	case name != "":
		dir := findV1(root, name, p)
		if dir == "" {
			return layout{}, fmt.Errorf("cgroupfs: no v1 hierarchy %q under %s: %w", name, root, ErrNoHierarchy)
		}
		return v1Layout(name, dir, unified, p), nil
	}
	for _, n := range autoOrder {
		if dir := findV1(root, n, p); dir != "" {
			return v1Layout(n, dir, unified, p), nil
		}
	}
	if unified != "" {
		return v2Layout(unified), nil
	}
	return layout{}, fmt.Errorf("cgroupfs: root %s is %s, not cgroup or cgroup2, and holds no cpuacct, cpu, systemd or unified hierarchy: %w",
		root, fsName(t), ErrNotCgroup)
}

// findV1 returns the mount of the v1 hierarchy name under root, or "".
// name is a directory under root ("cpuacct", "systemd") or, for a mount
// without a directory of that name, a subsystem mountinfo lists
// ("cpuacct", "name=systemd").
func findV1(root, name string, p probe) string {
	dirName := strings.TrimPrefix(name, cgroups.CgroupNamePrefix)
	if dir := filepath.Join(root, dirName); isV1(dir, p) {
		return dir
	}
	sub := name
	if name == "systemd" {
		sub = cgroups.CgroupNamePrefix + name
	}
	dir, err := p.mountpoint(root, sub)
	if err != nil || !strings.HasPrefix(dir, root+"/") || !isV1(dir, p) {
		return ""
	}
	return dir
}

// isV1 reports whether dir is a cgroup v1 mount.
func isV1(dir string, p probe) bool {
	t, err := p.fsType(dir)
	return err == nil && t == magicCgroup
}

// v2Layout returns the layout for walking the cgroup2 mount at dir.
func v2Layout(dir string) layout {
	return layout{version: V2, name: Unified, dir: dir, unified: dir, usage: cpuStatUsage, kernfs: true}
}

// v1Layout returns the layout for walking the v1 hierarchy mounted at dir.
// Its counter is its own cpuacct.usage when cpuacct is bound to it;
// otherwise the same path in the cpuacct hierarchy under root, if any.
func v1Layout(name, dir, unified string, p probe) layout {
	l := layout{version: V1, name: name, dir: dir, unified: unified, kernfs: true}
	switch {
	case p.exists(filepath.Join(dir, usageFileV1)):
		l.usage = usageSource{file: usageFileV1}
	default:
		if acct := findV1(filepath.Dir(dir), "cpuacct", p); acct != "" && p.exists(filepath.Join(acct, usageFileV1)) {
			l.usage = usageSource{file: usageFileV1, mirror: acct}
		}
	}
	return l
}

// fsName names a filesystem magic number for error messages.
func fsName(t int64) string {
	switch t {
	case magicCgroup2:
		return "cgroup2"
	case magicCgroup:
		return "cgroup"
	case magicTmpfs:
		return "tmpfs"
	}
	return fmt.Sprintf("a filesystem of type 0x%x", t)
}
