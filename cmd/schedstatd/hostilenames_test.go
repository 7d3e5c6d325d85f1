package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedstatd/schedstatd/internal/e2e"
	"github.com/schedstatd/schedstatd/internal/testcg"
	"github.com/schedstatd/schedstatd/internal/testproc"
)

// hostileNames are cgroup names anyone with a delegated subtree can make,
// and the id label's last element each must get: a byte that is not
// UTF-8, control bytes (tab, CR, an escape sequence) with a backslash, and
// wide characters.
var hostileNames = []struct{ dir, label string }{
	{"bad\xffutf8", `bad\xffutf8`},
	{"tab\there\r\x1b[31mred\\x2d", "tab\there\r\x1b[31mred\\\\x2d"},
	{"日本語のコンテナ", "日本語のコンテナ"},
}

// TestHostileCgroupNames makes real cgroups with such names, one with a
// process in it, and checks that a scrape has every series, the daemon's
// own metrics included, with the names made valid and distinct, and that
// promtool finds nothing wrong with it.
func TestHostileCgroupNames(t *testing.T) {
	cg := testcg.Make(t, "cpuacct")
	base := "/" + filepath.Base(cg)
	for _, n := range hostileNames {
		if err := os.Mkdir(filepath.Join(cg, n.dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := testproc.StartIn(t, 2, filepath.Join(cg, hostileNames[0].dir))
	defer p.Stop(t)
	d := startDaemon(t, "--collect.interval=200ms")

	resp, err := http.Get("http://" + d.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s, %v", resp.Status, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	mfs := scrapeBody(t, resp)
	for _, name := range []string{"schedstatd_collections_total", "schedstatd_cgroups", "go_goroutines"} {
		if mfs[name] == nil {
			t.Errorf("no %s in the scrape", name)
		}
	}
	cgroups := int(mfs["schedstatd_cgroups"].GetMetric()[0].GetGauge().GetValue())
	for _, name := range []string{"container_cpu_schedstat_run_seconds_total", "container_cpu_schedstat_runqueue_seconds_total",
		"container_cpu_schedstat_run_periods_total", "container_schedstat_tasks"} {
		if n := len(mfs[name].GetMetric()); n < cgroups-5 || n > cgroups+5 {
			t.Errorf("%s has %d series, while %d cgroups were walked", name, n, cgroups)
		}
	}
	for _, n := range hostileNames {
		id := base + "/" + n.label
		if _, ok := value(mfs, "container_cpu_schedstat_run_seconds_total", id); !ok {
			t.Errorf("no series with id=%q", id)
		}
	}
	if tasks, _ := value(mfs, "container_schedstat_tasks", base+"/"+hostileNames[0].label); int(tasks) != len(p.Threads(t)) {
		t.Errorf("tasks of %q = %v, want %d", hostileNames[0].label, tasks, len(p.Threads(t)))
	}
	if strings.Contains(d.log(), "panic") {
		t.Errorf("the daemon logged a panic:\n%s", d.log())
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		e2e.Unavailable(t, "promtool is not installed (Debian package prometheus)")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
