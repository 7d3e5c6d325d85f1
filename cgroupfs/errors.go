package cgroupfs

import (
	"bytes"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ErrParse is wrapped by every error that reports a malformed kernel file:
// a tasks or cgroup.threads line that is not a thread id, a cpuacct.usage
// or cpu.stat without a counter.
var ErrParse = errors.New("malformed")

// ErrNotCgroup is wrapped by the error Open returns when the root is not a
// cgroup filesystem and holds no cgroup hierarchy below it.
var ErrNotCgroup = errors.New("not a cgroup filesystem")

// ErrNoHierarchy is wrapped by the error Open returns when the hierarchy
// asked for is not mounted under the root.
var ErrNoHierarchy = errors.New("no such cgroup hierarchy")

// IsRemoved reports whether err is what the kernel returns for a cgroup
// that was removed while it was being read: ENOENT when a file is opened in
// or below a removed directory, ENODEV when a file opened before the
// removal is read. Such a cgroup is left out of the listing, not reported.
// A missing file in a directory that still exists is not told apart here;
// the walker checks the directory again before it trusts ENOENT.
func IsRemoved(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV)
}

// parseError returns an error wrapping ErrParse that quotes what failed to
// parse, cut to a length that keeps a garbage file from flooding a log.
func parseError(what string, b []byte) error {
	const maxQuoted = 64
	if len(b) > maxQuoted {
		b = b[:maxQuoted]
	}
	return fmt.Errorf("%w %s: %q", ErrParse, what, b)
}

// nextLine splits b at its first newline: the line before it and the rest
// after it, or all of b and nil. It allocates nothing.
func nextLine(b []byte) (line, rest []byte) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}
