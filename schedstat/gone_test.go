package schedstat_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/schedstatd/schedstatd/schedstat"
)

func TestIsGone(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"ESRCH", unix.ESRCH, true},
		{"ENOENT", unix.ENOENT, true},
		{"wrapped ESRCH", fmt.Errorf("read /proc/7/schedstat: %w", unix.ESRCH), true},
		{"wrapped ENOENT", fmt.Errorf("open /proc/7: %w", unix.ENOENT), true},
		{"PathError ENOENT", &os.PathError{Op: "open", Path: "/proc/7/schedstat", Err: unix.ENOENT}, true},
		{"twice wrapped ESRCH", fmt.Errorf("pass: %w", fmt.Errorf("task 7: %w", unix.ESRCH)), true},
		{"EACCES", unix.EACCES, false},
		{"wrapped EACCES", fmt.Errorf("open /proc/7: %w", unix.EACCES), false},
		{"EPERM", unix.EPERM, false},
		{"EBADF", unix.EBADF, false},
		{"parse error", fmt.Errorf("%w: %q", schedstat.ErrParse, "1 2"), false},
		{"EOF", io.EOF, false},
		{"ESRCH in words only", errors.New("no such process"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := schedstat.IsGone(tc.err); got != tc.want {
				t.Errorf("IsGone(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestIsGoneParseError(t *testing.T) {
	_, err := schedstat.Parse([]byte("1 2\n"))
	if !errors.Is(err, schedstat.ErrParse) {
		t.Fatalf("Parse(\"1 2\\n\") error %v does not wrap ErrParse", err)
	}
	if schedstat.IsGone(err) {
		t.Errorf("IsGone(%v) = true for a parse error", err)
	}
	_, err = schedstat.ParseStartTime([]byte("1 (x) S"))
	if !errors.Is(err, schedstat.ErrParse) {
		t.Fatalf("ParseStartTime error %v does not wrap ErrParse", err)
	}
	if schedstat.IsGone(err) {
		t.Errorf("IsGone(%v) = true for a parse error", err)
	}
}
