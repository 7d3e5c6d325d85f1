package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// TestUnreadableParentKeepsChild runs the daemon as an unprivileged user
// and makes a parent cgroup unreadable to it for 3 s: the child below is
// not taken for removed. Its series stay and never fall, its threads go on
// counting through their kept fds, the error is counted by reason, and
// /healthz says why once the partial passes have lasted three intervals.
// Once the parent is readable again, the child's run time over the whole
// window matches its CPU counter.
func TestUnreadableParentKeepsChild(t *testing.T) {
	e2e.RequireRoot(t)
	cg := testcg.Make(t, testcg.Default())
	sub := filepath.Join(cg, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(cg, 0o755); testcg.Remove(t, cg, sub) })
	p := testproc.StartIn(t, 2, sub)
	id := "/" + filepath.Base(cg) + "/sub"
	nobody := asNobody(t)
	d := startWrapped(t, nobody, "--collect.interval=100ms", "--collect.source=procfs", "--exit-capture=off")
	url := "http://" + d.addr
	time.Sleep(300 * time.Millisecond)
	// The window's ends are read with the threads stopped, so the scrape
	// and the CPU counter see the same time however loaded the machine.
	p.Stop(t)
	usage0 := testcg.Usage(t, sub)
	run0, ok := value(scrape(t, http.DefaultClient, url+"/metrics"), "container_cpu_schedstat_run_seconds_total", id)
	if !ok || run0 == 0 {
		t.Fatalf("%s: run %v, present %v before the parent was made unreadable", id, run0, ok)
	}
	p.Cont(t)
	if err := os.Chmod(cg, 0); err != nil {
		t.Fatal(err)
	}
	last := run0
	var health string
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		v, ok := value(scrape(t, http.DefaultClient, url+"/metrics"), "container_cpu_schedstat_run_seconds_total", id)
		if !ok || v < last {
			t.Fatalf("parent unreadable: %s present %v, run %v after %v", id, ok, v, last)
		}
		last = v
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			health = string(b)
		}
	}
	if !strings.Contains(health, "permission denied") {
		t.Errorf("/healthz never said why the tree could not be read: %q", health)
	}
	mfs := scrape(t, http.DefaultClient, url+"/metrics")
	if v := labelled(mfs, "schedstatd_cgroup_read_errors_total", "reason", "permission"); v == 0 {
		t.Error("no cgroup read errors counted for reason permission")
	}
	if err := os.Chmod(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	p.Stop(t)
	run1, _ := value(scrape(t, http.DefaultClient, url+"/metrics"), "container_cpu_schedstat_run_seconds_total", id)
	usage1 := testcg.Usage(t, sub)
	ran, used := run1-run0, float64(usage1-usage0)/1e9
	t.Logf("%s ran %.4fs over the window, its CPU counter %.4fs; /healthz said %q", id, ran, used, strings.TrimSpace(health))
	if r := ran / used; r < 0.99 || r > 1.01 {
		t.Errorf("%s ran %.4fs, its CPU counter %.4fs", id, ran, used)
	}
	if mfs := scrape(t, http.DefaultClient, url+"/metrics"); mfs["schedstatd_partial_collections_total"].GetMetric()[0].GetCounter().GetValue() == 0 {
		t.Error("no partial pass counted")
	}
}

// labelled returns the value of the series of family name whose label
// key is val.
func labelled(mfs map[string]*dto.MetricFamily, name, key, val string) float64 {
	for _, m := range mfs[name].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == key && lp.GetValue() == val {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
