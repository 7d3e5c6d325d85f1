package schedstat

import (
	"errors"
	"fmt"
)

// ErrParse is wrapped by every error Parse and ParseStartTime return.
var ErrParse = errors.New("schedstat: malformed")

// Stat holds one task's schedstat counters.
type Stat struct {
	// RunNanoseconds is the time the task ran on a CPU (sum_exec_runtime).
	RunNanoseconds uint64
	// WaitNanoseconds is the time the task waited on a runqueue (run_delay).
	WaitNanoseconds uint64
	// Timeslices is the number of times the task ran on a CPU (pcount).
	Timeslices uint64
}

// Add returns the field-wise sum of s and o.
func (s Stat) Add(o Stat) Stat {
	return Stat{s.RunNanoseconds + o.RunNanoseconds, s.WaitNanoseconds + o.WaitNanoseconds, s.Timeslices + o.Timeslices}
}

// Since returns the field-wise increase of s over an earlier reading prev of
// the same task. A field that went backwards, which the kernel never does
// for one task, counts as no increase, so a caller's sums cannot fall.
func (s Stat) Since(prev Stat) Stat {
	return Stat{sub(s.RunNanoseconds, prev.RunNanoseconds), sub(s.WaitNanoseconds, prev.WaitNanoseconds), sub(s.Timeslices, prev.Timeslices)}
}

// AtMost reports whether no counter of s is above o's: a later reading of
// the same task is never below an earlier one.
func (s Stat) AtMost(o Stat) bool {
	return s.RunNanoseconds <= o.RunNanoseconds && s.WaitNanoseconds <= o.WaitNanoseconds && s.Timeslices <= o.Timeslices
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// Parse parses the contents of /proc/<tid>/schedstat: exactly three unsigned
// decimals separated by single spaces, optionally ending in one newline.
// Anything else is an error wrapping ErrParse that quotes what it saw.
// Parse allocates only when it returns an error.
func Parse(b []byte) (Stat, error) {
	var v [3]uint64
	rest := b
	for i := range v {
		n, used, ok := parseUint(rest)
		if !ok {
			return Stat{}, parseError(b)
		}
		v[i] = n
		rest = rest[used:]
		sep := byte(' ')
		if i == len(v)-1 {
			sep = '\n'
		}
		if len(rest) > 0 {
			if rest[0] != sep {
				return Stat{}, parseError(b)
			}
			rest = rest[1:]
		} else if i < len(v)-1 {
			return Stat{}, parseError(b)
		}
	}
	if len(rest) != 0 {
		return Stat{}, parseError(b)
	}
	return Stat{RunNanoseconds: v[0], WaitNanoseconds: v[1], Timeslices: v[2]}, nil
}

// parseUint reads the leading decimal digits of b. It fails on no digits
// and on overflow of uint64.
func parseUint(b []byte) (n uint64, used int, ok bool) {
	for used < len(b) && b[used] >= '0' && b[used] <= '9' {
		d := uint64(b[used] - '0')
		if n > (1<<64-1-d)/10 {
			return 0, 0, false
		}
		n = n*10 + d
		used++
	}
	return n, used, used > 0
}

// maxQuoted bounds how much of a bad input an error message repeats.
const maxQuoted = 64

func parseError(b []byte) error {
	if len(b) > maxQuoted {
		return fmt.Errorf("%w: %q (%d bytes)", ErrParse, string(b[:maxQuoted])+"...", len(b))
	}
	return fmt.Errorf("%w: %q", ErrParse, string(b))
}
