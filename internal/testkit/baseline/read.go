package baseline

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"

	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// ErrFields is wrapped by ReadFile's error for contents that are not three
// fields.
var ErrFields = errors.New("baseline: unexpected number of fields in schedstat")

// ReadFunc reads the counters of the task with id pid.
type ReadFunc func(pid int32) (schedstat.Stat, error)

// ReadFile returns a ReadFunc that reads <procRoot>/<pid>/schedstat the way
// cAdvisor does: the path joined on every call, the whole file read with
// os.ReadFile, the trailing newline trimmed, the fields split on spaces and
// each converted to a string and parsed with strconv.ParseUint.
func ReadFile(procRoot string) ReadFunc {
	return func(pid int32) (schedstat.Stat, error) {
		contents, err := os.ReadFile(path.Join(procRoot, strconv.Itoa(int(pid)), "schedstat"))
		if err != nil {
			return schedstat.Stat{}, err
		}
		return parseFields(contents)
	}
}

func parseFields(contents []byte) (schedstat.Stat, error) {
	raw := bytes.Split(bytes.TrimRight(contents, "\n"), []byte(" "))
	if len(raw) != 3 {
		return schedstat.Stat{}, fmt.Errorf("%w: %q", ErrFields, contents)
	}
	var v [3]uint64
	for i, r := range raw {
		n, err := strconv.ParseUint(string(r), 10, 64)
		if err != nil {
			return schedstat.Stat{}, err
		}
		v[i] = n
	}
	return schedstat.Stat{RunNanoseconds: v[0], WaitNanoseconds: v[1], Timeslices: v[2]}, nil
}

// OpenReadClose reads the schedstat file at path with open, one read into
// buf (at least 1 KiB) and close, and parses it with
// schedstat.Parse: a reader that keeps no fd but allocates nothing for the
// contents.
func OpenReadClose(path string, buf []byte) (schedstat.Stat, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return schedstat.Stat{}, err
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil {
		return schedstat.Stat{}, err
	}
	return schedstat.Parse(buf[:n])
}
