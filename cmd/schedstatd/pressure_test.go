package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
)

// TestPressureOffIsSaid runs the daemon on a cgroup2 tree whose pressure
// files the kernel hides (cgroup.pressure set to 0, as psi=0 hides them
// everywhere) and on the machine's own layout, where PSI is on: the
// daemon says which in its log and in schedstatd_cpu_pressure_enabled,
// and serves pressure series only where the files are.
func TestPressureOffIsSaid(t *testing.T) {
	dir := testcg.Make(t, "unified")
	if err := os.WriteFile(filepath.Join(dir, "cgroup.pressure"), []byte("0"), 0); err != nil {
		t.Fatalf("turn PSI off for %s: %v", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cpu.pressure")); !os.IsNotExist(err) {
		t.Fatalf("cpu.pressure with cgroup.pressure 0: %v", err)
	}
	for _, tc := range []struct {
		name  string
		flags []string
		on    bool
	}{
		{"psi off", []string{"--path.cgroupfs=" + dir}, false},
		{"psi on", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat("/proc/pressure/cpu"); tc.on && err != nil {
				t.Skipf("this kernel has no PSI: %v", err)
			}
			d := startDaemon(t, tc.flags...)
			mfs := scrape(t, http.DefaultClient, "http://"+d.addr+"/metrics")
			if got := gauge(mfs, "schedstatd_cpu_pressure_enabled"); got != boolFloat(tc.on) {
				t.Errorf("schedstatd_cpu_pressure_enabled = %v, want %v", got, boolFloat(tc.on))
			}
			_, some := mfs["container_cpu_schedstat_pressure_some_seconds_total"]
			if some != tc.on {
				t.Errorf("pressure series served: %v, want %v", some, tc.on)
			}
			if said := strings.Contains(d.log(), "no CPU pressure (PSI)"); said == tc.on {
				t.Errorf("log says PSI is off: %v, want %v:\n%s", said, !tc.on, d.log())
			}
		})
	}
}
