package schedstat

import (
	"bytes"

	"golang.org/x/sys/unix"
)

// UserHZ is USER_HZ, the unit of a task's start time in /proc/<tid>/stat
// (field 22): 100 on every architecture Linux runs containers on.
const UserHZ = 100

// StartTicks converts nanoseconds since boot (CLOCK_BOOTTIME, the clock of
// task_struct.start_boottime) to clock ticks as /proc/<tid>/stat shows a
// start time (nsec_to_clock_t, which truncates).
func StartTicks(ns uint64) uint64 { return ns / (1e9 / UserHZ) }

// BootTicks returns CLOCK_BOOTTIME in clock ticks: a task that started
// before this call has a start time no greater than what it returns.
func BootTicks() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic("schedstat: CLOCK_BOOTTIME: " + err.Error()) // Linux has had it since 2.6.39
	}
	return StartTicks(uint64(ts.Nano()))
}

// startTimeField is the index of starttime among the fields that follow the
// command name in /proc/<tid>/stat: field 22 counted from 1, where the field
// after the closing parenthesis (state) is field 3.
const startTimeField = 22 - 3

// ParseStartTime returns field 22 of the contents of /proc/<tid>/stat: the
// task's start time in clock ticks since boot. The command name in
// parentheses may hold spaces and parentheses, so fields are counted from
// the last ')'. It allocates only when it returns an error.
func ParseStartTime(b []byte) (uint64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+1 >= len(b) || b[i+1] != ' ' {
		return 0, parseError(b)
	}
	rest := b[i+2:]
	for f := 0; f < startTimeField; f++ {
		sp := bytes.IndexByte(rest, ' ')
		if sp <= 0 {
			return 0, parseError(b)
		}
		rest = rest[sp+1:]
	}
	n, used, ok := parseUint(rest)
	if !ok || (used < len(rest) && rest[used] != ' ' && rest[used] != '\n') {
		return 0, parseError(b)
	}
	return n, nil
}
