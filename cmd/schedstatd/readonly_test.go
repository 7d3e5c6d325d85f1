package main

import (
	"math"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// readOnlyMounts, run by sh in a private mount namespace, binds procfs and
// every cgroup hierarchy read-only under $R, then executes the daemon.
const readOnlyMounts = `set -e
R=$0
mkdir -p "$R/proc" "$R/cgroup"
mount --bind /proc "$R/proc"
mount -o remount,bind,ro "$R/proc"
mount -t tmpfs -o size=1m tmpfs "$R/cgroup"
for d in /sys/fs/cgroup/*/; do
	n=$(basename "$d")
	mkdir "$R/cgroup/$n"
	mount --bind "$d" "$R/cgroup/$n"
	mount -o remount,bind,ro "$R/cgroup/$n"
done
mount -o remount,ro "$R/cgroup"
exec "$@"
`

// TestReadOnlyMounts runs the daemon over read-only bind mounts of procfs
// and the cgroup hierarchies, as a DaemonSet mounts the host's: it needs
// to write nothing there, so it counts exactly as it does over the
// originals.
func TestReadOnlyMounts(t *testing.T) {
	e2e.RequireRoot(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		e2e.Unavailable(t, "no unshare(1)")
	}
	root := t.TempDir()
	cg := testcg.Make(t, testcg.Default())
	id := "/" + filepath.Base(cg)
	p := testproc.StartIn(t, 2, cg)
	wrapper := []string{unshare, "--mount", "--propagation=private", "/bin/sh", "-c", readOnlyMounts, root}
	d := startWrapped(t, wrapper, "--path.procfs="+root+"/proc", "--path.cgroupfs="+root+"/cgroup", "--collect.interval=100ms")
	time.Sleep(300 * time.Millisecond)
	p.Stop(t)
	mfs := scrape(t, http.DefaultClient, "http://"+d.addr+"/metrics")
	for _, m := range mfs["schedstatd_read_errors_total"].GetMetric() {
		if v := m.GetCounter().GetValue(); v != 0 {
			t.Errorf("read errors %v: %v", m.GetLabel(), v)
		}
	}
	run, ok := value(mfs, "container_cpu_schedstat_run_seconds_total", id)
	kernel := float64(testcg.Usage(t, cg)) / 1e9
	if !ok || math.Abs(run-kernel) > 0.01*kernel {
		t.Errorf("over read-only mounts: run %.6fs (%v), kernel %.6fs", run, ok, kernel)
	}
	if tasks, _ := value(mfs, "container_schedstat_tasks", id); int(tasks) != len(p.Threads(t)) {
		t.Errorf("tasks %v, want %d", tasks, len(p.Threads(t)))
	}
}
