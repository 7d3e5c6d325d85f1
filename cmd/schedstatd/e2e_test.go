package main

import (
	"io"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testcg"
	"github.com/schedstatd/schedstatd/internal/testproc"
)

var containerCounters = []string{
	"container_cpu_schedstat_run_seconds_total",
	"container_cpu_schedstat_runqueue_seconds_total",
	"container_cpu_schedstat_run_periods_total",
	"container_cpu_usage_seconds_total",
}

// TestDaemonMatchesKernel runs the daemon against this machine's real
// cgroups, in the hierarchy it picks by itself (v1 cpuacct on a hybrid
// node) and in the unified one, with a 4-thread workload in a test cgroup.
func TestDaemonMatchesKernel(t *testing.T) {
	for _, tc := range []struct{ hierarchy, flag string }{
		{"cpuacct", ""},
		{"unified", "--cgroup.hierarchy=unified"},
	} {
		t.Run(tc.hierarchy, func(t *testing.T) {
			cg := testcg.Make(t, tc.hierarchy)
			id := "/" + filepath.Base(cg)
			args := []string{"--collect.interval=200ms"}
			if tc.flag != "" {
				args = append(args, tc.flag)
			}
			d := startDaemon(t, args...)
			url := "http://" + d.addr + "/metrics"

			p := testproc.StartIn(t, 4, cg)
			time.Sleep(time.Second)
			p.Stop(t)
			mfs := scrape(t, http.DefaultClient, url)
			kernel := float64(testcg.Usage(t, cg)) / 1e9
			run, ok := value(mfs, "container_cpu_schedstat_run_seconds_total", id)
			usage, ok2 := value(mfs, "container_cpu_usage_seconds_total", id)
			if !ok || !ok2 {
				t.Fatalf("no series for id=%q", id)
			}
			t.Logf("%s: schedstat run %.6fs, exported usage %.6fs, kernel file %.6fs", id, run, usage, kernel)
			if math.Abs(run-usage) > 0.01*usage {
				t.Errorf("run %.6fs is not within 1%% of container_cpu_usage_seconds_total %.6fs", run, usage)
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
		})
	}
}

func TestDaemonEndpoints(t *testing.T) {
	testcg.Make(t, "cpuacct") // needs root like the daemon
	d := startDaemon(t)
	for _, tc := range []struct {
		path, want string
		code       int
	}{
		{"/healthz", "ok", http.StatusOK},
		{"/", "/metrics", http.StatusOK},
		{"/metrics", "schedstatd_build_info", http.StatusOK},
	} {
		resp, err := http.Get("http://" + d.addr + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
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
