package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// TestExitHookSwitch: with --exit-capture.hook=sched_switch the daemon
// takes exits at sched_switch even where sched_process_free attaches, says
// so in its start line, and counts a cgroup's 600 threads of 3 ms, most of
// them born and dead between two passes, to 0.1% of the cgroup's own CPU
// counter in both directions: the hook brings every thread's record.
func TestExitHookSwitch(t *testing.T) {
	cg := testcg.Make(t, testcg.Default())
	id := "/" + filepath.Base(cg)
	d := startDaemon(t, "--exit-capture=on", "--exit-capture.hook=sched_switch")
	if start := d.log(); !strings.Contains(start, "exit_hook=sched_switch") {
		t.Fatalf("the start line does not say exit_hook=sched_switch:\n%s", start)
	}
	time.Sleep(1500 * time.Millisecond) // a pass lists the cgroup before its threads come
	testproc.StartShortLived(t, "threads 600 3ms 3", cg).Wait(t, 90*time.Second)
	// The next passes see the threads gone, and their records delivered.
	time.Sleep(3 * time.Second)
	mfs := bracketed(t, d, cg, id)
	run, ok := value(mfs, "container_cpu_schedstat_run_seconds_total", id)
	usage := float64(testcg.Usage(t, cg)) / 1e9
	t.Logf("%s: run %.6fs, the cgroup's counter %.6fs (%.5f); retired tasks unrecorded on the node %v",
		id, run, usage, run/usage, selfMetric(mfs, "schedstatd_tasks_retired_unrecorded_total", ""))
	if !ok || usage < 1 {
		t.Fatalf("run %v (served %v), usage %.3fs: the workload did not run or is not shown", run, ok, usage)
	}
	if math.Abs(run/usage-1) > 0.001 {
		t.Errorf("run %.6fs against the cgroup's counter %.6fs: more than 0.1%% apart", run, usage)
	}
	if v := selfMetric(mfs, "schedstatd_tasks_retired_unrecorded_total", ""); math.IsNaN(v) {
		t.Error("schedstatd_tasks_retired_unrecorded_total is not served")
	}
}
