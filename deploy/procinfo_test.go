package deploy

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/schedstatd/schedstatd/internal/testkit/containerdtest"
)

// capBits are the capabilities the DaemonSet adds, by their bits.
var capBits = map[string]uint{"SYS_RESOURCE": 24, "BPF": 39, "PERFMON": 38}

// freePort returns a TCP port nothing listens on, on the loopback.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// procStatus returns the fields of /proc/<pid>/status.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	return fields
}

// hasCapability reports whether this process's bounding set holds bit.
func hasCapability(t *testing.T, bit uint) bool {
	bnd, err := strconv.ParseUint(procStatus(t, os.Getpid())["CapBnd"], 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return bnd&(1<<bit) != 0
}

// memTotal returns the machine's memory in bytes.
func memTotal(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb * 1024
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}

// cgroupPID returns the one process of the cgroup id (in the cpuacct
// hierarchy).
func cgroupPID(t *testing.T, id string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(containerdtest.CgroupDir("cpuacct", id), "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 1 {
		t.Fatalf("cgroup %s holds processes %v, want one", id, f)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// mountOptions returns the per-mount options of each mount point the
// process pid sees, by its path in the process's root.
func mountOptions(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "mountinfo"))
	if err != nil {
		t.Fatal(err)
	}
	opts := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 6 {
			opts[f[4]] = f[5]
		}
	}
	return opts
}

// readInt reads a file holding one integer.
func readInt(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// callContext returns a context for one CRI call of at most d.
func callContext(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// labels returns a series' labels.
func labels(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// seriesOf returns the labels of family's series of cgroup id, or nil.
func seriesOf(mfs map[string]*dto.MetricFamily, family, id string) map[string]string {
	for _, m := range mfs[family].GetMetric() {
		if l := labels(m); l["id"] == id {
			return l
		}
	}
	return nil
}

// valueOf returns the counter family's value for cgroup id, or -1.
func valueOf(mfs map[string]*dto.MetricFamily, family, id string) float64 {
	for _, m := range mfs[family].GetMetric() {
		if labels(m)["id"] == id {
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

// gaugeOf returns the gauge family's value, of the series whose one label
// has value label (any series if label is ""), or -1.
func gaugeOf(mfs map[string]*dto.MetricFamily, family, label string) float64 {
	for _, m := range mfs[family].GetMetric() {
		if label == "" || (len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == label) {
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// labelOf returns the value of label name of family's first series.
func labelOf(mfs map[string]*dto.MetricFamily, family, name string) string {
	for _, m := range mfs[family].GetMetric() {
		return labels(m)[name]
	}
	return ""
}
