package collector

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// kubeletNamesFile lists the names kubelet's cAdvisor endpoint serves,
// with where the list comes from.
const kubeletNamesFile = "testdata/kubelet-cadvisor-metrics.txt"

// kubeletNames returns the metric names in kubeletNamesFile.
func kubeletNames(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(kubeletNamesFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		names[strings.Fields(line)[0]] = true
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	// A truncated or emptied list would pass everything.
	for _, n := range []string{"container_cpu_usage_seconds_total", "container_cpu_cfs_throttled_seconds_total", "container_pressure_cpu_waiting_seconds_total", "container_memory_working_set_bytes"} {
		if !names[n] {
			t.Fatalf("%s does not list %s", kubeletNamesFile, n)
		}
	}
	return names
}

// TestNoNameKubeletServes checks every series the exporter serves over the
// fixture, where each kind of series is present: none has a name that
// kubelet's cAdvisor endpoint also serves, whatever its labels. Where
// Prometheus scrapes both, queries and adapter rules without a job matcher
// would add the two.
func TestNoNameKubeletServes(t *testing.T) {
	kubelet := kubeletNames(t)
	_, reg := fixtureExporter(t)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, mf := range mfs {
		served[mf.GetName()] = true
		if kubelet[mf.GetName()] {
			t.Errorf("%s is served by kubelet's cAdvisor endpoint too", mf.GetName())
		}
	}
	// The fixture must show every container series, or this test checks
	// less than the daemon serves.
	for _, n := range goldenMetrics {
		if !served[n] {
			t.Errorf("the fixture serves no %s", n)
		}
	}
}
