package schedstat

import (
	"errors"

	"golang.org/x/sys/unix"
)

// IsGone reports whether err means the task no longer exists: ESRCH from a
// kept fd whose task was reaped, or ENOENT from opening a task that exited.
func IsGone(err error) bool {
	return errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT)
}
