package procsource_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/schedstat"
)

// fakeProc is a procRoot for Open whose tasks are fixture files.
const fakeProc = "../test/fixtures/schedstat/proc"

// fakeTasks covers every task directory in the fixtures' fake proc tree,
// plus one id that has none.
var fakeTasks = []struct {
	tid       int32
	wantStart uint64
	want      schedstat.Stat
	openErr   error // from Open, wrapped
	readErr   error // from Read, wrapped
	gone      bool  // IsGone of the error
}{
	{tid: 100, wantStart: 38975, want: schedstat.Stat{RunNanoseconds: 123, WaitNanoseconds: 456, Timeslices: 7}},
	// The command name "(a) b)" holds a space and a ')'.
	{tid: 101, wantStart: 12345, want: schedstat.Stat{}},
	// stat ends before field 22.
	{tid: 102, openErr: schedstat.ErrParse},
	// No schedstat: in a real /proc that is a task that exited between
	// reading its stat and opening its schedstat.
	{tid: 103, openErr: unix.ENOENT, gone: true},
	// schedstat holds two fields.
	{tid: 104, wantStart: 38975, readErr: schedstat.ErrParse},
	// schedstat holds the largest values, which must fit in the read.
	{tid: 105, wantStart: 38975, want: schedstat.Stat{RunNanoseconds: math.MaxUint64, WaitNanoseconds: math.MaxUint64, Timeslices: math.MaxUint64}},
	// schedstat is longer than any the kernel writes (a fourth field).
	{tid: 106, wantStart: 38975, readErr: schedstat.ErrParse},
	// No such task.
	{tid: 199, openErr: unix.ENOENT, gone: true},
}

func TestOpenFakeProc(t *testing.T) {
	for _, tc := range fakeTasks {
		t.Run(strconv.Itoa(int(tc.tid)), func(t *testing.T) {
			fds := openFDs(t)
			task, err := procsource.Open(fakeProc, tc.tid)
			if tc.openErr != nil {
				if !errors.Is(err, tc.openErr) {
					t.Fatalf("Open(%q, %d) = %v, %v; want an error wrapping %v", fakeProc, tc.tid, task, err, tc.openErr)
				}
				if task != nil {
					t.Errorf("Open(%q, %d) returned a Task with its error", fakeProc, tc.tid)
				}
				if !strings.Contains(err.Error(), fakeProc+"/"+strconv.Itoa(int(tc.tid))) {
					t.Errorf("Open error %q does not name the task's directory", err)
				}
				if got := schedstat.IsGone(err); got != tc.gone {
					t.Errorf("IsGone(%v) = %v, want %v", err, got, tc.gone)
				}
				if got := openFDs(t); got != fds {
					t.Errorf("failed Open left %d fds open, want %d", got, fds)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(%q, %d): %v", fakeProc, tc.tid, err)
			}
			defer task.Close()
			if got := openFDs(t); got != fds+1 {
				t.Errorf("Open left %d fds open, want %d (the schedstat file only)", got, fds+1)
			}
			if task.TID() != tc.tid {
				t.Errorf("TID() = %d, want %d", task.TID(), tc.tid)
			}
			if task.StartTime() != tc.wantStart {
				t.Errorf("StartTime() = %d, want %d", task.StartTime(), tc.wantStart)
			}
			// Read twice: each read starts at offset 0, so the second sees
			// the whole file again rather than end of file.
			for i := range 2 {
				got, err := task.Read()
				if tc.readErr != nil {
					if !errors.Is(err, tc.readErr) {
						t.Fatalf("Read #%d = %+v, %v; want an error wrapping %v", i, got, err, tc.readErr)
					}
					if schedstat.IsGone(err) {
						t.Errorf("IsGone(%v) = true for a malformed file", err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("Read #%d: %v", i, err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("Read #%d mismatch (-want +got):\n%s", i, diff)
				}
			}
			if err := task.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if got := openFDs(t); got != fds {
				t.Errorf("after Close %d fds are open, want %d", got, fds)
			}
		})
	}
}

func TestFakeProcCovered(t *testing.T) {
	ents, err := os.ReadDir(fakeProc)
	if err != nil {
		t.Fatal(err)
	}
	var onDisk, inTable []string
	for _, e := range ents {
		onDisk = append(onDisk, e.Name())
	}
	for _, tc := range fakeTasks {
		if _, err := os.Stat(fmt.Sprintf("%s/%d", fakeProc, tc.tid)); err == nil {
			inTable = append(inTable, strconv.Itoa(int(tc.tid)))
		}
	}
	slices.Sort(inTable)
	if !slices.Equal(onDisk, inTable) {
		t.Errorf("fake proc tasks on disk %q, in the table %q", onDisk, inTable)
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
