package cgroupfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/opencontainers/cgroups"
)

// v1NoLimit is the smallest value of memory.limit_in_bytes that means no
// limit: the kernel shows PAGE_COUNTER_MAX pages, rounded down to a page.
const v1NoLimit = 1 << 62

// MemoryLimit is a cgroup's memory limit and what it uses now, in bytes.
type MemoryLimit struct {
	LimitBytes, UsageBytes uint64
	// File is the limit file read, for messages.
	File string
}

// SelfMemoryLimit returns the memory limit of the cgroup the calling
// process belongs to, as /proc/self/cgroup names it, read under root (the
// cgroup mount root, as for Open): memory.max and memory.current on
// cgroup2, memory.limit_in_bytes and memory.usage_in_bytes on v1. ok is
// false when the cgroup has no limit or the memory controller is not
// there. In a cgroup namespace the path is relative to the namespace's
// root, which a mount of the host's hierarchy does not share: the limit
// found is then the host root's, none.
func SelfMemoryLimit(root string) (m MemoryLimit, ok bool, err error) {
	paths, err := cgroups.ParseCgroupFile("/proc/self/cgroup")
	if err != nil {
		return m, false, err
	}
	type files struct{ limit, usage string }
	var tries []files
	if p, found := paths["memory"]; found {
		dir := filepath.Join(root, "memory", p)
		tries = append(tries, files{filepath.Join(dir, "memory.limit_in_bytes"), filepath.Join(dir, "memory.usage_in_bytes")})
	}
	if p, found := paths[""]; found {
		for _, base := range []string{root, filepath.Join(root, "unified")} {
			dir := filepath.Join(base, p)
			tries = append(tries, files{filepath.Join(dir, "memory.max"), filepath.Join(dir, "memory.current")})
		}
	}
	for _, f := range tries {
		limit, err := readBytesValue(f.limit)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return m, false, err
		}
		if limit == 0 || limit >= v1NoLimit {
			return m, false, nil
		}
		usage, err := readBytesValue(f.usage)
		if err != nil {
			return m, false, err
		}
		return MemoryLimit{LimitBytes: limit, UsageBytes: usage, File: f.limit}, true, nil
	}
	return m, false, nil
}

// readBytesValue reads a file of one number of bytes, or "max" (returned
// as 0).
func readBytesValue(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	b = bytes.TrimSpace(b)
	if string(b) == "max" {
		return 0, nil
	}
	v, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, parseError("memory value", b))
	}
	return v, nil
}
