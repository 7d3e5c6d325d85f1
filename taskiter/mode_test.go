package taskiter_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/loadmode"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/taskiter"
)

// denied is a Load that fails as the kernel does without CAP_BPF, and
// counts its calls.
type denied struct{ calls int }

func (d *denied) load(*ebpf.ProgramSpec) (*ebpf.Program, error) {
	d.calls++
	return nil, fmt.Errorf("load program: %w", os.ErrPermission)
}

// TestSelectDenied simulates a kernel that refuses to load the program:
// auto falls back with one warning line, on fails with an error that says
// why, off never tries.
func TestSelectDenied(t *testing.T) {
	e2e.RequireRoot(t) // kernel BTF is read before loading is tried
	h, err := cgroupfs.Open("/sys/fs/cgroup", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode      loadmode.Mode
		wantErr   bool
		wantCalls int
		wantLog   string
	}{
		{loadmode.Auto, false, 1, "level=WARN msg=\"task iterator unavailable, falling back to the procfs source\""},
		{loadmode.On, true, 1, ""},
		{loadmode.Off, false, 0, "level=INFO msg=\"task iterator off"},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			var d denied
			var logs bytes.Buffer
			s, err := taskiter.Select(tc.mode, taskiter.Options{Hierarchy: h, Load: d.load}, slog.New(slog.NewTextHandler(&logs, nil)))
			if s != nil {
				s.Close()
				t.Fatal("got a source from a denied load")
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && (!errors.Is(err, taskiter.ErrUnsupported) || !errors.Is(err, os.ErrPermission)) {
				t.Errorf("err = %v, want one wrapping ErrUnsupported and os.ErrPermission", err)
			}
			if d.calls != tc.wantCalls {
				t.Errorf("Load called %d times, want %d", d.calls, tc.wantCalls)
			}
			if n := strings.Count(logs.String(), "\n"); tc.wantLog != "" && (n != 1 || !strings.Contains(logs.String(), tc.wantLog)) {
				t.Errorf("log:\n%s\nwant one line with %s", logs.String(), tc.wantLog)
			}
		})
	}
}

// TestSelectAutoLoads checks that auto uses the iterator where it loads.
func TestSelectAutoLoads(t *testing.T) {
	e2e.RequireRoot(t)
	h, err := cgroupfs.Open("/sys/fs/cgroup", "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := taskiter.Select(loadmode.Auto, taskiter.Options{Hierarchy: h}, slog.New(slog.DiscardHandler))
	if err != nil || s == nil {
		t.Fatalf("Select(auto) = %v, %v; want a source as root", s, err)
	}
	s.Close()
}

// TestOpenRefusesNameOnly checks that a v1 hierarchy without a controller,
// where no css names a task's cgroup, is refused as unsupported.
func TestOpenRefusesNameOnly(t *testing.T) {
	e2e.RequireRoot(t)
	h, err := cgroupfs.Open("/sys/fs/cgroup", "systemd")
	if err != nil {
		t.Skipf("no name=systemd hierarchy: %v", err)
	}
	if s, err := taskiter.Open(taskiter.Options{Hierarchy: h}); !errors.Is(err, taskiter.ErrUnsupported) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open over %s: err %v, want ErrUnsupported", h.Dir(), err)
	}
}
