package schedstat

import "bytes"

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
