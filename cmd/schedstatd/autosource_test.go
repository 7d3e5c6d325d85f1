package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedstatd/schedstatd/aggregate"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testbpf"
	"golang.org/x/sys/unix"
)

// TestAutoSourcePins starts the daemon with the default
// --collect.source=auto twice: with --bpf.pin-path on a bpf filesystem
// mounted already (the test's own, standing for the host's) it takes the
// kernel totals and pins their maps there; with it on a plain directory
// it takes the task iterator, and neither mounts a bpf filesystem nor
// makes the pin directory.
func TestAutoSourcePins(t *testing.T) {
	e2e.RequireRoot(t)
	kernelTotals := aggregate.KernelSupports() == nil
	bpffs := testbpf.Mount(t)
	plain := t.TempDir()
	bin := plainBinary(t)
	for _, tc := range []struct {
		name, pins, want string
	}{
		{"bpffs", filepath.Join(bpffs, "schedstatd"), "aggregate"},
		{"plain", filepath.Join(plain, "schedstatd"), "iter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "aggregate" && !kernelTotals {
				want = "iter" // auto falls back, with a log line (aggregate TestSelect)
			}
			d := startBinary(t, bin, nil, "--bpf.pin-path="+tc.pins, "--container-runtime-endpoint=none")
			mfs := scrape(t, http.DefaultClient, "http://"+d.addr+"/metrics")
			for _, source := range []string{"aggregate", "iter", "procfs"} {
				got, wantV := selfMetric(mfs, "schedstatd_task_source", source), 0.0
				if source == want {
					wantV = 1
				}
				if got != wantV {
					t.Errorf("schedstatd_task_source{source=%q} = %v, want %v\n%s", source, got, wantV, d.log())
				}
			}
			_, err := os.Stat(tc.pins)
			if made := err == nil; made != (want == "aggregate") {
				t.Errorf("pin directory %s made: %v, with the %s source", tc.pins, made, want)
			}
			if want == "aggregate" {
				ents, _ := os.ReadDir(tc.pins)
				if len(ents) == 0 {
					t.Errorf("no map pinned in %s", tc.pins)
				}
			}
			var st unix.Statfs_t
			if err := unix.Statfs(filepath.Dir(tc.pins), &st); err != nil {
				t.Fatal(err)
			}
			if onBPF := st.Type == unix.BPF_FS_MAGIC; onBPF != (tc.name == "bpffs") {
				t.Errorf("%s on a bpf filesystem: %v after the daemon", filepath.Dir(tc.pins), onBPF)
			}
			if log := d.log(); want == "aggregate" && !strings.Contains(log, "kernel totals on") {
				t.Errorf("the daemon does not say the kernel totals are on:\n%s", log)
			}
		})
	}
}
