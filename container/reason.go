package container

import (
	"errors"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// Reason classifies a failed read of a task that still exists. A task that
// exited is not a failure and has no Reason.
type Reason int

// The reasons a read can fail, in the order Reasons lists them.
const (
	// ReasonPermission is EACCES or EPERM: the daemon may not read the task.
	ReasonPermission Reason = iota
	// ReasonParse is a file that did not hold what the kernel writes.
	ReasonParse
	// ReasonFDLimit is EMFILE or ENFILE: no fd was left to open the task.
	ReasonFDLimit
	// ReasonOther is anything else.
	ReasonOther

	numReasons
)

var reasonNames = [numReasons]string{"permission", "parse", "fd_limit", "other"}

// String returns the reason as the metrics label it is exported under.
func (r Reason) String() string {
	if r < 0 || r >= numReasons {
		return "unknown"
	}
	return reasonNames[r]
}

// Reasons lists every Reason, so exporters can report each one, even at
// zero.
func Reasons() []Reason {
	rs := make([]Reason, numReasons)
	for i := range rs {
		rs[i] = Reason(i)
	}
	return rs
}

// ReasonOf classifies err, which must not be a gone error (see
// schedstat.IsGone).
func ReasonOf(err error) Reason {
	switch {
	case errors.Is(err, schedstat.ErrParse), errors.Is(err, cgroupfs.ErrParse):
		return ReasonParse
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return ReasonPermission
	case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE):
		return ReasonFDLimit
	default:
		return ReasonOther
	}
}
