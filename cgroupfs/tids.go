package cgroupfs

import "bytes"

// ParseTIDs appends to dst the thread ids in b, the contents of a v2
// cgroup.threads or a v1 tasks file (one decimal id per line), and returns
// the extended slice. An id of 0, which the kernel writes for a task
// outside the reader's PID namespace before Linux 6.18, is left out: it
// names no task the reader can see. A line that is not an id in the range
// of a pid_t is an error wrapping ErrParse, and then dst is returned as it
// was passed, so a garbage file contributes no threads. ParseTIDs allocates
// nothing unless dst must grow or it returns an error.
func ParseTIDs(b []byte, dst []int32) ([]int32, error) {
	start := len(dst)
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		id, ok := parseID(line)
		if !ok {
			return dst[:start], parseError("thread id", line)
		}
		if id != 0 {
			dst = append(dst, id)
		}
	}
	return dst, nil
}

// parseID parses a non-empty run of decimal digits that fits a pid_t.
func parseID(b []byte) (int32, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
		if n > 1<<31-1 {
			return 0, false
		}
	}
	return int32(n), true
}

// parseUint parses a non-empty run of decimal digits that fits a uint64.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}
