package schedlat

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
)

// TestFallbackReal checks the fallback where the kernel refuses the
// program: Select returns no source after one warning line, and the self
// metrics say the features are off and unavailable. On a kernel without
// BPF task storage (Linux 5.10) the refusal is the kernel's own and Open
// must fail with ErrUnsupported; elsewhere Open must load, and a refused
// load stands in for the kernel's refusal.
func TestFallbackReal(t *testing.T) {
	e2e.RequireRoot(t)
	h, err := cgroupfs.Open(testcg.Root, testcg.Default())
	if err != nil {
		e2e.Unavailable(t, "no hierarchy: "+err.Error())
	}
	opts := Options{Hierarchy: h, Latency: true, Preemption: true}
	if err := Supported(); err != nil {
		t.Logf("this kernel has no BPF task storage: %v", err)
		if _, err := Open(opts); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Open on a kernel without task storage: %v, want ErrUnsupported", err)
		}
	} else {
		s, err := Open(opts)
		if err != nil {
			t.Fatalf("Open on a kernel with task storage: %v", err)
		}
		s.Close()
		opts.Load = func(*ebpf.CollectionSpec) (*ebpf.Collection, error) {
			return nil, errors.New("refused for the test")
		}
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	s, unavailable := Select(opts, logger)
	if s != nil || !unavailable {
		t.Fatalf("Select = %v, unavailable %v; want no source, unavailable", s, unavailable)
	}
	if lines := strings.Split(strings.TrimSpace(logs.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "unsupported") {
		t.Errorf("want one warning line naming the reason, got:\n%s", logs.String())
	}
	want := `
# HELP schedstatd_preemption_tracking_enabled 1 if preemption attribution (--collect.preemption) is loaded and served; 0 if off or unavailable.
# TYPE schedstatd_preemption_tracking_enabled gauge
schedstatd_preemption_tracking_enabled 0
# HELP schedstatd_runqueue_latency_enabled 1 if the runqueue latency histogram (--collect.latency) is loaded and served; 0 if off or unavailable.
# TYPE schedstatd_runqueue_latency_enabled gauge
schedstatd_runqueue_latency_enabled 0
# HELP schedstatd_sched_switch_program_unavailable 1 if --collect.latency or --collect.preemption was asked for but the kernel or the privileges refused the program (Linux 5.10 and older have no BPF task storage); 0 otherwise.
# TYPE schedstatd_sched_switch_program_unavailable gauge
schedstatd_sched_switch_program_unavailable 1
`
	if err := testutil.CollectAndCompare(NewCollector(NewRollup(nil), unavailable), strings.NewReader(want),
		"schedstatd_runqueue_latency_enabled", "schedstatd_preemption_tracking_enabled", "schedstatd_sched_switch_program_unavailable"); err != nil {
		t.Error(err)
	}
	// Neither asked: nothing loads, nothing is logged.
	logs.Reset()
	if s, unavailable := Select(Options{Hierarchy: h}, logger); s != nil || unavailable || logs.Len() != 0 {
		t.Errorf("nothing asked: %v, %v, logged %q", s, unavailable, logs.String())
	}
}
