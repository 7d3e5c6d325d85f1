package main

import (
	"io"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/aggregate"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

var containerCounters = []string{
	"container_cpu_schedstat_run_seconds_total",
	"container_cpu_schedstat_runqueue_seconds_total",
	"container_cpu_schedstat_run_periods_total",
	"container_cpu_schedstat_usage_seconds_total",
}

// TestDaemonMatchesKernel runs the daemon against this machine's real
// cgroups, with a 4-thread workload in a test cgroup, over each task source
// and three layouts: the hierarchy it picks by itself (v1 cpuacct on this
// hybrid node), the unified one named by flag, and a pure v2 node (the
// cgroup2 mount given as the cgroup root, as a v2-only node mounts it at
// /sys/fs/cgroup). On a pure v2 machine (the kernel matrix's VMs) it runs
// over that machine's own layout instead: the root found by itself and
// named by flag.
func TestDaemonMatchesKernel(t *testing.T) {
	unified := filepath.Join(testcg.Root, "unified")
	type layoutCase struct {
		name, hierarchy string
		flags           []string
		// layout is what the daemon's start line must say it walks.
		layout string
	}
	cases := []layoutCase{
		{"hybrid-cpuacct", "cpuacct", nil, "cgroup_version=v1 dir=" + filepath.Join(testcg.Root, "cpuacct")},
		{"hybrid-unified", "unified", []string{"--cgroup.hierarchy=unified"}, "cgroup_version=v2 dir=" + unified},
		{"pure-v2", "unified", []string{"--path.cgroupfs=" + unified}, "cgroup_version=v2 dir=" + unified},
	}
	if testcg.PureV2() {
		cases = []layoutCase{
			{"pure-v2-root", "unified", nil, "cgroup_version=v2 dir=" + testcg.Root},
			{"pure-v2-named", "unified", []string{"--cgroup.hierarchy=unified"}, "cgroup_version=v2 dir=" + testcg.Root},
		}
	}
	for i, tc := range cases {
		sources := []string{"aggregate", "iter", "procfs"}
		if testing.Short() && i > 0 && testcg.PureV2() {
			// The second pure-v2 case differs from the first by a flag
			// naming the same directory: one source shows it is read
			// (the kernel matrix runs -short).
			sources = sources[1:2]
		}
		for _, source := range sources {
			t.Run(tc.name+"/"+source, func(t *testing.T) {
				if err := aggregate.KernelSupports(); source == "aggregate" && err != nil {
					t.Skipf("--collect.source=aggregate: %v (auto falls back to the iterator; aggregate TestSelect)", err)
				}
				d := daemonMatchesKernel(t, tc.hierarchy, append([]string{"--collect.source=" + source}, tc.flags...))
				if log := d.log(); !strings.Contains(log, tc.layout) {
					t.Errorf("the daemon does not say %q:\n%s", tc.layout, log)
				}
				mfs := scrape(t, http.DefaultClient, "http://"+d.addr+"/metrics")
				for _, m := range mfs["schedstatd_task_source"].GetMetric() {
					if want := m.GetLabel()[0].GetValue() == source; (m.GetGauge().GetValue() == 1) != want {
						t.Errorf("schedstatd_task_source{source=%q} = %v with --collect.source=%s", m.GetLabel()[0].GetValue(), m.GetGauge().GetValue(), source)
					}
				}
			})
		}
	}
}

// daemonMatchesKernel runs the workload in a test cgroup of hierarchy and
// compares what the daemon, started with flags, says of it with the
// kernel's counter. It returns the daemon, still running.
func daemonMatchesKernel(t *testing.T, hierarchy string, flags []string) *daemon {
	cg := testcg.Make(t, hierarchy)
	id := "/" + filepath.Base(cg)
	d := startDaemon(t, append([]string{"--collect.interval=200ms"}, flags...)...)
	url := "http://" + d.addr + "/metrics"

	p := testproc.StartIn(t, 4, cg)
	// The daemon counts each thread's whole life, the kernel's counter
	// only what it ran in the cgroup: the helper's shell start-up before
	// it moves itself there (about 25 ms under software emulation, in the
	// kernel matrix's VMs) must stay well below 1% of the window.
	time.Sleep(2 * time.Second)
	p.Stop(t)
	mfs := scrape(t, http.DefaultClient, url)
	kernel := float64(testcg.Usage(t, cg)) / 1e9
	run, ok := value(mfs, "container_cpu_schedstat_run_seconds_total", id)
	usage, ok2 := value(mfs, "container_cpu_schedstat_usage_seconds_total", id)
	if !ok || !ok2 {
		t.Fatalf("no series for id=%q", id)
	}
	t.Logf("%s: schedstat run %.6fs, exported usage %.6fs, kernel file %.6fs", id, run, usage, kernel)
	if math.Abs(run-usage) > 0.01*usage {
		t.Errorf("run %.6fs is not within 1%% of container_cpu_schedstat_usage_seconds_total %.6fs", run, usage)
	}
	if math.Abs(run-kernel) > 0.01*kernel {
		t.Errorf("run %.6fs is not within 1%% of the kernel's %.6fs", run, kernel)
	}
	if tasks, _ := value(mfs, "container_schedstat_tasks", id); int(tasks) != len(p.Threads(t)) {
		t.Errorf("container_schedstat_tasks = %v, want %d", tasks, len(p.Threads(t)))
	}

	// The workload exits: nothing of it may fall over ten scrapes.
	p.Kill()
	last := map[string]float64{}
	for _, name := range containerCounters {
		last[name], _ = value(mfs, name, id)
	}
	for i := range 10 {
		mfs := scrape(t, http.DefaultClient, url)
		for _, name := range containerCounters {
			v, ok := value(mfs, name, id)
			if !ok {
				t.Fatalf("scrape %d: %s{id=%q} is gone", i, name, id)
			}
			if v < last[name] {
				t.Errorf("scrape %d: %s{id=%q} fell from %v to %v", i, name, id, last[name], v)
			}
			last[name] = v
		}
		time.Sleep(50 * time.Millisecond)
	}
	if tasks, _ := value(scrape(t, http.DefaultClient, url), "container_schedstat_tasks", id); tasks != 0 {
		t.Errorf("container_schedstat_tasks = %v after the workload exited", tasks)
	}
	return d
}

func TestDaemonEndpoints(t *testing.T) {
	testcg.Make(t, testcg.Default()) // needs root like the daemon
	d := startDaemon(t)
	for _, tc := range []struct {
		path, want string
		code       int
	}{
		{"/healthz", "ok", http.StatusOK},
		{"/", "/metrics", http.StatusOK},
		{"/metrics", "schedstatd_build_info", http.StatusOK},
	} {
		var resp *http.Response
		var b []byte
		// /healthz says 503 while passes lag three intervals behind, as
		// they may for a while on a starved CPU (a VM of the kernel
		// matrix on a busy host): it must turn ok.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			var err error
			if resp, err = http.Get("http://" + d.addr + tc.path); err != nil {
				t.Fatal(err)
			}
			b, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if tc.path != "/healthz" || resp.StatusCode == tc.code || time.Now().After(deadline) {
				break
			}
		}
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.want) {
			t.Errorf("GET %s: %s, body %.200q; want %d containing %q", tc.path, resp.Status, b, tc.code, tc.want)
		}
	}
	mfs := scrape(t, http.DefaultClient, "http://"+d.addr+"/metrics")
	for _, name := range []string{
		"schedstatd_collections_total", "schedstatd_collection_duration_seconds",
		"schedstatd_tasks_tracked", "schedstatd_task_exits_total", "schedstatd_task_reuses_total",
		"schedstatd_read_errors_total", "go_goroutines", "process_open_fds",
	} {
		if mfs[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	if n := len(mfs["schedstatd_read_errors_total"].GetMetric()); n != 4 {
		t.Errorf("schedstatd_read_errors_total has %d reasons, want all 4 from the start", n)
	}
	if v, ok := value(mfs, "container_cpu_schedstat_run_seconds_total", "/"); !ok || v <= 0 {
		t.Errorf("root run seconds = %v, %v", v, ok)
	}
}
