package collector

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/internal/testkit/testrun"
	"github.com/schedstatd/schedstatd/procsource"
)

var update = flag.Bool("update", false, "rewrite golden files")

const (
	fixtures = "../test/fixtures"
	golden   = fixtures + "/golden/metrics.prom"
	ctrID    = "4f1d5c2a9b8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a392817065f4e"
	dockerID = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
	podSlice = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice"
	// badUTF8 and controls are names any owner of a delegated subtree can
	// make: a byte that is not UTF-8, and a tab, a CR, an escape
	// sequence and a backslash.
	badUTF8  = "/user.slice/bad\xffutf8\xc3"
	controls = "/user.slice/tab\there\r\x1b[31mred\\x2d"
)

// goldenMetrics are the series the golden file pins; the rest (times,
// durations, go_*, process_*) vary from run to run.
var goldenMetrics = []string{
	"container_cpu_schedstat_run_seconds_total",
	"container_cpu_schedstat_runqueue_seconds_total",
	"container_cpu_schedstat_run_periods_total",
	"container_cpu_schedstat_usage_seconds_total",
	"container_schedstat_tasks",
	"container_cpu_schedstat_cfs_periods_total",
	"container_cpu_schedstat_cfs_throttled_periods_total",
	"container_cpu_schedstat_cfs_throttled_seconds_total",
	"container_cpu_schedstat_cfs_bursts_total",
	"container_cpu_schedstat_cfs_burst_seconds_total",
	"container_cpu_schedstat_pressure_some_seconds_total",
	"container_cpu_schedstat_pressure_full_seconds_total",
	"schedstatd_collections_total",
	"schedstatd_read_errors_total",
	"schedstatd_tasks_tracked",
	"schedstatd_task_exits_total",
	"schedstatd_task_reuses_total",
	"schedstatd_cgroups",
}

// fixtureExporter is an exporter over one pass of the fixture procfs in
// test/fixtures/proc (tid 107 holds a malformed schedstat, 108 is missing)
// and a tree of the cgroup shapes a Kubernetes node has.
func fixtureExporter(t *testing.T) (*Exporter, *prometheus.Registry) {
	t.Helper()
	tree := synth.NewTree("/", "/kubepods.slice", "/kubepods.slice/kubepods-burstable.slice", podSlice,
		podSlice+"/cri-containerd-"+ctrID+".scope", "/system.slice", "/system.slice/kubelet.service",
		"/system.slice/docker-"+dockerID+".scope", "/user.slice", badUTF8, controls)
	tree.Set("/", 106)
	tree.Set(podSlice+"/cri-containerd-"+ctrID+".scope", 101, 102)
	tree.Set("/system.slice/kubelet.service", 103)
	tree.Set("/system.slice/docker-"+dockerID+".scope", 104, 107)
	tree.Set("/user.slice", 108)
	tree.Set(badUTF8, 105)
	tree.Cgroups[0].UsageNanoseconds, tree.Cgroups[0].HasUsage = 40_000_000_000, true
	tree.Cgroups[4].UsageNanoseconds, tree.Cgroups[4].HasUsage = 4_600_000_000, true
	// The container has a quota (v2 cpu.max with burst) and pressure; the
	// root has pressure only, with no full line (a kernel before 5.13);
	// the other cgroups have neither file.
	tree.Cgroups[4].Bandwidth = cgroupfs.Bandwidth{Periods: 1200, ThrottledPeriods: 340, ThrottledNanoseconds: 5_100_000_000, HasThrottling: true,
		Bursts: 3, BurstNanoseconds: 12_000_000, HasBursts: true}
	tree.Cgroups[4].Pressure = cgroupfs.Pressure{SomeNanoseconds: 6_200_000_000, FullNanoseconds: 4_100_000_000, HasSome: true, HasFull: true}
	tree.Cgroups[0].Pressure = cgroupfs.Pressure{SomeNanoseconds: 32_732_119_000, HasSome: true}

	p := NewPoller(container.NewTable(tree, procsource.Opener{Root: fixtures + "/proc"}), time.Hour, quietLogger())
	testrun.Background(t, p.Run)
	for p.Last().Counters.Passes == 0 {
		time.Sleep(time.Millisecond)
	}
	e := NewExporter(p)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e)
	return e, reg
}

func TestGoldenMetrics(t *testing.T) {
	_, reg := fixtureExporter(t)
	if *update {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		keep := map[string]bool{}
		for _, n := range goldenMetrics {
			keep[n] = true
		}
		for _, mf := range mfs {
			if keep[mf.GetName()] {
				if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	defer f.Close()
	if err := testutil.GatherAndCompare(reg, f, goldenMetrics...); err != nil {
		t.Error(err)
	}
}

func TestExporterLint(t *testing.T) {
	e, _ := fixtureExporter(t)
	problems, err := testutil.CollectAndLint(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// podLabeler names one container and its pod from the identity.
type podLabeler struct{}

func (podLabeler) Labels(id cgroupfs.Identity) ContainerLabels {
	switch {
	case id.ContainerID == ctrID:
		return ContainerLabels{Container: "web", Pod: "web-0", Namespace: "shop", Image: "nginx:1.27"}
	case id.PodUID != "" && id.ContainerID == "":
		return ContainerLabels{Pod: "web-0", Namespace: "shop"}
	}
	return ContainerLabels{}
}

// ctrlText is the name of the cgroup controls as the text format writes
// its label value: the backslash doubled by LabelValue, then by the format.
const ctrlText = "tab\there\r\x1b[31mred\\\\\\\\x2d"

func TestLabelerFillsKubernetesLabels(t *testing.T) {
	e, _ := fixtureExporter(t)
	e.labeler = podLabeler{}
	want := `
# HELP container_schedstat_tasks Live tasks (threads) listed in the cgroup and its descendants at the last pass.
# TYPE container_schedstat_tasks gauge
container_schedstat_tasks{container="",id="/",image="",name="/",namespace="",pod=""} 6
container_schedstat_tasks{container="",id="/kubepods.slice",image="",name="kubepods.slice",namespace="",pod=""} 2
container_schedstat_tasks{container="",id="/kubepods.slice/kubepods-burstable.slice",image="",name="kubepods-burstable.slice",namespace="",pod=""} 2
container_schedstat_tasks{container="",id="` + podSlice + `",image="",name="kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice",namespace="shop",pod="web-0"} 2
container_schedstat_tasks{container="web",id="` + podSlice + `/cri-containerd-` + ctrID + `.scope",image="nginx:1.27",name="` + ctrID + `",namespace="shop",pod="web-0"} 2
container_schedstat_tasks{container="",id="/system.slice",image="",name="system.slice",namespace="",pod=""} 2
container_schedstat_tasks{container="",id="/system.slice/docker-` + dockerID + `.scope",image="",name="` + dockerID + `",namespace="",pod=""} 1
container_schedstat_tasks{container="",id="/system.slice/kubelet.service",image="",name="kubelet.service",namespace="",pod=""} 1
container_schedstat_tasks{container="",id="/user.slice",image="",name="user.slice",namespace="",pod=""} 1
container_schedstat_tasks{container="",id="/user.slice/bad\\xffutf8\\xc3",image="",name="bad\\xffutf8\\xc3",namespace="",pod=""} 1
container_schedstat_tasks{container="",id="/user.slice/` + ctrlText + `",image="",name="` + ctrlText + `",namespace="",pod=""} 0
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "container_schedstat_tasks"); err != nil {
		t.Error(err)
	}
}
