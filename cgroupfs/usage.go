package cgroupfs

import (
	"bytes"
	"fmt"
)

// errNoUsageUsec is ParseCPUStat's error for a file without usage_usec.
var errNoUsageUsec = fmt.Errorf("%w cpu.stat: no usage_usec", ErrParse)

// CPUStat holds the time counters of a v2 cpu.stat file. They count the
// cgroup and all its descendants, in microseconds.
type CPUStat struct {
	// UsageMicroseconds is usage_usec: CPU time of any kind.
	UsageMicroseconds uint64
	// UserMicroseconds is user_usec: CPU time in user mode.
	UserMicroseconds uint64
	// SystemMicroseconds is system_usec: CPU time in the kernel.
	SystemMicroseconds uint64
}

// ParseCPUStat parses b, the contents of a v2 cpu.stat file: lines of a
// key, one space and an unsigned decimal. usage_usec must be present;
// user_usec and system_usec are read when present; other keys (the
// throttling and burst counters the cpu controller adds) are skipped
// without being checked. Errors wrap ErrParse. It allocates nothing on
// success.
func ParseCPUStat(b []byte) (CPUStat, error) {
	var s CPUStat
	var haveUsage bool
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		key, val, _ := bytes.Cut(line, []byte{' '})
		var dst *uint64
		switch string(key) {
		case "usage_usec":
			dst, haveUsage = &s.UsageMicroseconds, true
		case "user_usec":
			dst = &s.UserMicroseconds
		case "system_usec":
			dst = &s.SystemMicroseconds
		default:
			continue
		}
		n, ok := parseUint(val)
		if !ok {
			return CPUStat{}, parseError("cpu.stat line", line)
		}
		*dst = n
	}
	if !haveUsage {
		return CPUStat{}, errNoUsageUsec
	}
	return s, nil
}

// ParseUsage parses b, the contents of a v1 cpuacct.usage file: one
// unsigned decimal, the CPU time of the cgroup and all its descendants in
// nanoseconds, and a newline. Errors wrap ErrParse. It allocates nothing on
// success.
func ParseUsage(b []byte) (uint64, error) {
	line := bytes.TrimSuffix(b, []byte{'\n'})
	n, ok := parseUint(line)
	if !ok {
		return 0, parseError("cpuacct.usage", b)
	}
	return n, nil
}
