package cgroupfs

import (
	"fmt"
	"path/filepath"
)

// The files each hierarchy version lists threads in and keeps its CPU
// counter in.
const (
	threadsFileV1 = "tasks"
	threadsFileV2 = "cgroup.threads"
	usageFileV1   = "cpuacct.usage"
	usageFileV2   = "cpu.stat"
)

// usageSource says where a hierarchy's cgroups keep their CPU counter.
type usageSource struct {
	// file is usageFileV1, usageFileV2, or "" when there is no counter.
	file string
	// mirror, when set, is the v1 cpuacct mount whose cgroup at the same
	// relative path holds the counter: the walked v1 hierarchy (cpu,
	// name=systemd) has none of its own, and kubelet, systemd and the
	// container runtimes make the same path in every v1 hierarchy.
	mirror string
}

// cpuStatUsage is the usage source of every v2 hierarchy.
var cpuStatUsage = usageSource{file: usageFileV2}

// threadsFile returns the name of the file a cgroup lists its threads in.
func threadsFile(v2 bool) string {
	if v2 {
		return threadsFileV2
	}
	return threadsFileV1
}

// readUsage reads the cgroup's own CPU counter into c, opening it
// relative to parentfd unless it is in the mirror hierarchy. There a
// cgroup without a twin simply has no counter; elsewhere a missing or
// malformed counter file is an error.
func (w *walker) readUsage(parentfd int, n *node, c *Cgroup) error {
	if w.mirror == "" && w.usageFile == "" {
		return nil
	}
	base := parentfd
	if w.mirror != "" {
		base = atCWD
	}
	err := w.readCounter(base, n, usageKind, &n.usageFD)
	if err == nil {
		c.UsageNanoseconds, err = w.parseUsage(w.buf)
	} else if w.mirror != "" && IsRemoved(err) {
		return nil
	}
	if err != nil {
		return w.usageError(n, err)
	}
	c.HasUsage = true
	if w.v2 {
		// The bandwidth counters share the v2 cpu.stat just read.
		bw, err := ParseBandwidth(w.buf)
		if err != nil {
			return w.usageError(n, err)
		}
		c.Bandwidth = bw
	}
	return nil
}

// parseUsage parses a counter file's contents into nanoseconds.
func (w *walker) parseUsage(b []byte) (uint64, error) {
	if !w.v2 {
		return ParseUsage(b)
	}
	s, err := ParseCPUStat(b)
	return s.UsageMicroseconds * 1000, err
}

// usageError names the counter file in err.
func (w *walker) usageError(n *node, err error) error {
	dir, file := w.dir, usageFileV1
	if w.mirror != "" {
		dir = w.mirror
	}
	if w.v2 {
		file = usageFileV2
	}
	return fmt.Errorf("cgroupfs: %s: %w", filepath.Join(dir, n.rel, file), err)
}
