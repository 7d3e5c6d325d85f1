package exitcapture

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/loadmode"
	"golang.org/x/sys/unix"
)

// denied stands in for a kernel that refuses an unprivileged process.
func denied(*ebpf.CollectionSpec) (*ebpf.Collection, error) {
	return nil, fmt.Errorf("map create: %w", unix.EPERM)
}

func TestSelect(t *testing.T) {
	deny := Options{Hierarchy: defaultHierarchy(t), Load: denied}
	// Without kernel BTF or outside the host PID namespace, Open fails
	// before it tries to load.
	_, btfErr := btf.LoadKernelSpec()
	host, _ := cgroupfs.InitialPIDNamespace("/proc")
	triesLoad := btfErr == nil && host
	for _, tc := range []struct {
		name    string
		mode    loadmode.Mode
		opts    Options
		wantErr bool
		wantLog string
	}{
		{"auto falls back when loading is denied", loadmode.Auto, deny, false, "level=WARN msg=\"exit capture unavailable, polling only"},
		{"on fails when loading is denied", loadmode.On, deny, true, ""},
		{"off loads nothing", loadmode.Off, deny, false, "exit capture off"},
		{"unknown mode", loadmode.Mode("yes"), deny, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			s, err := Select(tc.mode, tc.opts, slog.New(slog.NewTextHandler(&log, nil)))
			if s != nil {
				s.Close()
				t.Fatal("got a source")
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.mode == loadmode.On && (!errors.Is(err, ErrUnsupported) || triesLoad && !errors.Is(err, os.ErrPermission)) {
				t.Errorf("err = %v, want ErrUnsupported and a permission error", err)
			}
			if !strings.Contains(log.String(), tc.wantLog) || strings.Count(log.String(), "\n") > 1 {
				t.Errorf("log %q, want one line with %q", log.String(), tc.wantLog)
			}
		})
	}
}

// TestCollectorDisabled: after auto fell back, the metrics say capture is
// off and count nothing.
func TestCollectorDisabled(t *testing.T) {
	s, _ := Select(loadmode.Auto, Options{Hierarchy: defaultHierarchy(t), Load: denied}, slog.New(slog.DiscardHandler))
	c := NewCollector(s, nil, nil)
	want := `
# HELP schedstatd_exit_capture_enabled 1 if exit capture is loaded and exited tasks count up to their exit; 0 if the daemon polls only.
# TYPE schedstatd_exit_capture_enabled gauge
schedstatd_exit_capture_enabled 0
# HELP schedstatd_exit_events_lost_total Exit records lost because the kernel ring buffer or the queue between passes was full; those tasks count up to the last pass that saw them.
# TYPE schedstatd_exit_events_lost_total counter
schedstatd_exit_events_lost_total 0
# HELP schedstatd_exit_events_total Exit records received from the kernel, one per exited task (thread).
# TYPE schedstatd_exit_events_total counter
schedstatd_exit_events_total 0
# HELP schedstatd_exit_events_unattributed_total Exit records of tasks no pass saw whose cgroup was removed before a pass could list it, credited to the nearest ancestor that exists.
# TYPE schedstatd_exit_events_unattributed_total counter
schedstatd_exit_events_unattributed_total 0
# HELP schedstatd_migration_events_lost_total Move records lost because the queue between passes was full; that task's time since the last pass goes to its new cgroup. Records the ring had no room for are counted in schedstatd_exit_events_lost_total.
# TYPE schedstatd_migration_events_lost_total counter
schedstatd_migration_events_lost_total 0
# HELP schedstatd_migration_events_total Move records received from the kernel, one per task moved into another cgroup of the walked hierarchy (the thread-group leader alone when a whole process moves).
# TYPE schedstatd_migration_events_total counter
schedstatd_migration_events_total 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
}

// kernelTotals stands for the kernel totals' exit program.
type kernelTotals struct {
	loaded bool
	exits  uint64
}

func (k kernelTotals) HasExitHook() bool { return k.loaded }
func (k kernelTotals) Exits() uint64     { return k.exits }

// TestCollectorElsewhere: with no Source of its own, exit capture is on
// when the kernel totals take exits themselves, and their count is the
// exit events'; off when they do not.
func TestCollectorElsewhere(t *testing.T) {
	for _, tc := range []struct {
		k              kernelTotals
		enabled, exits int
	}{
		{kernelTotals{true, 42}, 1, 42},
		{kernelTotals{false, 42}, 0, 0},
	} {
		want := fmt.Sprintf(`
# HELP schedstatd_exit_capture_enabled 1 if exit capture is loaded and exited tasks count up to their exit; 0 if the daemon polls only.
# TYPE schedstatd_exit_capture_enabled gauge
schedstatd_exit_capture_enabled %d
# HELP schedstatd_exit_events_total Exit records received from the kernel, one per exited task (thread).
# TYPE schedstatd_exit_events_total counter
schedstatd_exit_events_total %d
`, tc.enabled, tc.exits)
		err := testutil.CollectAndCompare(NewCollector(nil, tc.k, nil), strings.NewReader(want), "schedstatd_exit_capture_enabled", "schedstatd_exit_events_total")
		if err != nil {
			t.Errorf("%+v: %v", tc.k, err)
		}
	}
}

// defaultHierarchy opens the hierarchy the daemon would walk here.
func defaultHierarchy(t testing.TB) *cgroupfs.Hierarchy {
	t.Helper()
	h, err := cgroupfs.Open("/sys/fs/cgroup", "")
	if err != nil {
		t.Fatal(err)
	}
	return h
}
