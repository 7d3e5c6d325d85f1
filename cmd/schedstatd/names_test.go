package main

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
)

// TestNoNameKubeletServes scrapes the daemon on this machine's real
// cgroups, where the root has bandwidth counters (from its v1 cpu twin)
// and pressure: no family it serves has a name in the list of names
// kubelet's cAdvisor endpoint serves (collector/testdata, with its
// source), whatever the labels.
func TestNoNameKubeletServes(t *testing.T) {
	testcg.Make(t, testcg.Default()) // needs root like the daemon
	b, err := os.ReadFile("../../collector/testdata/kubelet-cadvisor-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	kubelet := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			kubelet[f[0]] = true
		}
	}
	if !kubelet["container_cpu_usage_seconds_total"] || !kubelet["container_cpu_cfs_throttled_seconds_total"] {
		t.Fatalf("the list of kubelet's names lacks the CPU series: %d names", len(kubelet))
	}
	d := startDaemon(t)
	mfs := scrape(t, http.DefaultClient, "http://"+d.addr+"/metrics")
	for _, name := range []string{"container_cpu_schedstat_usage_seconds_total", "container_cpu_schedstat_cfs_throttled_seconds_total", "container_cpu_schedstat_pressure_some_seconds_total"} {
		if mfs[name] == nil {
			t.Errorf("the daemon serves no %s here, so the check below is partial", name)
		}
	}
	for name := range mfs {
		if kubelet[name] {
			t.Errorf("%s is served by kubelet's cAdvisor endpoint too", name)
		}
	}
}
