package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"golang.org/x/sys/unix"
)

// TestHidepidProcfs runs the daemon as an unprivileged user over a procfs
// mounted with hidepid=2: it says so at start, counts the reads it cannot
// make as permission errors, still counts its own tasks, and no counter
// falls.
func TestHidepidProcfs(t *testing.T) {
	e2e.RequireRoot(t)
	proc := t.TempDir()
	if err := unix.Mount("proc", proc, "proc", 0, "hidepid=2"); err != nil {
		t.Fatalf("mount procfs with hidepid=2: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(proc, unix.MNT_DETACH) })
	os.Chmod(filepath.Dir(proc), 0o755)
	os.Chmod(proc, 0o555)

	cg := testcg.Make(t, testcg.Default())
	id := "/" + filepath.Base(cg)
	testproc.StartIn(t, 2, cg) // root's threads: hidden from the daemon
	nobody := asNobody(t)
	d := startWrapped(t, nobody, "--path.procfs="+proc, "--collect.interval=100ms")
	url := "http://" + d.addr + "/metrics"
	time.Sleep(300 * time.Millisecond)
	mfs := scrape(t, http.DefaultClient, url)

	var permission float64
	for _, m := range mfs["schedstatd_read_errors_total"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "reason" && lp.GetValue() == "permission" {
				permission = m.GetCounter().GetValue()
			}
		}
	}
	if permission == 0 {
		t.Errorf("no permission errors counted for tasks hidden by hidepid")
	}
	if !strings.Contains(d.log(), "hidepid") {
		t.Errorf("no word of hidepid in the log:\n%s", d.log())
	}
	if tracked := mfs["schedstatd_tasks_tracked"].GetMetric()[0].GetGauge().GetValue(); tracked < 1 {
		t.Errorf("tracked %v tasks: the daemon's own should be visible", tracked)
	}
	if run, _ := value(mfs, "container_cpu_schedstat_run_seconds_total", id); run != 0 {
		t.Errorf("hidden tasks counted %v s", run)
	}
	prev, _ := value(mfs, "container_cpu_schedstat_run_seconds_total", "/")
	for range 3 {
		v, _ := value(scrape(t, http.DefaultClient, url), "container_cpu_schedstat_run_seconds_total", "/")
		if v < prev {
			t.Errorf("root run seconds fell from %v to %v", prev, v)
		}
		prev = v
	}
}
