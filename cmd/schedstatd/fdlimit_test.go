package main

import (
	"math"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// TestFDLimitBelowThreadCount runs the daemon with RLIMIT_NOFILE far below
// the number of live threads and without CAP_SYS_RESOURCE to raise it: it
// keeps what fds it may, reads the other threads by open, read and close,
// says so once, and its totals still match the kernel's counter.
func TestFDLimitBelowThreadCount(t *testing.T) {
	e2e.RequireRoot(t)
	var wrapper []string
	for _, tool := range []string{"prlimit", "setpriv"} {
		path, err := exec.LookPath(tool)
		if err != nil {
			e2e.Unavailable(t, "no "+tool+"(1)")
		}
		wrapper = append(wrapper, path)
		switch tool {
		case "prlimit":
			wrapper = append(wrapper, "--nofile=200:200")
		case "setpriv":
			wrapper = append(wrapper, "--bounding-set=-sys_resource", "--inh-caps=-sys_resource")
		}
	}
	cg := testcg.Make(t, testcg.Default())
	id := "/" + filepath.Base(cg)
	p := testproc.StartIn(t, 300, cg)
	d := startWrapped(t, wrapper, "--collect.interval=200ms", "--collect.source=procfs")
	url := "http://" + d.addr + "/metrics"
	time.Sleep(500 * time.Millisecond)
	p.Stop(t)
	mfs := scrape(t, http.DefaultClient, url)
	unkept := mfs["schedstatd_tasks_unkept"].GetMetric()[0].GetGauge().GetValue()
	tracked := mfs["schedstatd_tasks_tracked"].GetMetric()[0].GetGauge().GetValue()
	t.Logf("tracked %v threads, %v of them without a kept fd", tracked, unkept)
	if unkept == 0 || tracked < 300 {
		t.Fatalf("tracked %v, unkept %v: want every thread tracked and some unkept under a limit of 200", tracked, unkept)
	}
	if fds := mfs["process_open_fds"].GetMetric()[0].GetGauge().GetValue(); fds > 200 {
		t.Errorf("process_open_fds = %v, above the limit", fds)
	}
	run, _ := value(mfs, "container_cpu_schedstat_run_seconds_total", id)
	kernel := float64(testcg.Usage(t, cg)) / 1e9
	if math.Abs(run-kernel) > 0.01*kernel {
		t.Errorf("run %.6fs, kernel %.6fs: more than 1%% apart", run, kernel)
	}
	if v, _ := value(mfs, "container_schedstat_tasks", id); int(v) != len(p.Threads(t)) {
		t.Errorf("container_schedstat_tasks = %v, want %d", v, len(p.Threads(t)))
	}
	scrape(t, http.DefaultClient, url)
	if n := strings.Count(d.log(), "open-file limit reached"); n != 1 {
		t.Errorf("the limit was reported %d times, want once:\n%s", n, d.log())
	}
}
