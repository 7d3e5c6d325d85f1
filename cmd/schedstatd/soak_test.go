package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// soakDuration is how long TestSoak churns: $SCHEDSTATD_SOAK (a Go
// duration; make soak sets 10m), else 60s.
func soakDuration(t *testing.T) time.Duration {
	s := os.Getenv("SCHEDSTATD_SOAK")
	if s == "" {
		return time.Minute
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("SCHEDSTATD_SOAK=%q: %v", s, err)
	}
	return d
}

// resources is what the soak watches in the daemon.
type resources struct {
	rssBytes, fds, taskFDs, goroutines, tracked int
}

// otherFDs returns the fds that are not kept for a tracked task: the
// tasks on the node come and go with whatever else runs, the rest must not.
func (r resources) otherFDs() int { return r.fds - r.taskFDs }

func (r resources) String() string {
	return fmt.Sprintf("RSS %.1f MiB, %d fds (%d not for tasks), %d goroutines, %d tasks tracked", float64(r.rssBytes)/(1<<20), r.fds, r.otherFDs(), r.goroutines, r.tracked)
}

// isTaskFD reports whether an fd's link target is a task's schedstat
// file, the one fd the procfs source keeps per task, or a cgroup counter
// file the walk keeps per cgroup (whose count follows the cgroups others
// make on the machine). The iterator source keeps no task fds, so the
// count comes from the fds themselves, not from the tracked tasks.
func isTaskFD(target string) bool {
	if strings.HasPrefix(target, "/sys/fs/cgroup/") {
		return strings.HasSuffix(target, "/cpuacct.usage") || strings.HasSuffix(target, "/cpu.stat") || strings.HasSuffix(target, "/cpu.pressure")
	}
	return strings.HasPrefix(target, "/proc/") && strings.HasSuffix(target, "/schedstat")
}

func measure(t *testing.T, d *daemon, mfs map[string]*dto.MetricFamily) resources {
	t.Helper()
	pid := d.cmd.Process.Pid
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	var r resources
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			r.rssBytes = kb << 10
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	r.fds = len(fds)
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && isTaskFD(target) {
			r.taskFDs++
		}
	}
	r.goroutines = int(mfs["go_goroutines"].GetMetric()[0].GetGauge().GetValue())
	r.tracked = int(mfs["schedstatd_tasks_tracked"].GetMetric()[0].GetGauge().GetValue())
	return r
}

// soaked is one daemon under soak, with what the soak saw of it.
type soaked struct {
	source    string
	d         *daemon
	url       string
	start     resources
	last      map[string]float64
	decreases int
}

// TestSoak runs the daemon under continuous thread and process churn in a
// test cgroup, scraping every second: no counter of the test's cgroups may
// ever fall, and memory,
// fds and goroutines must come back once the churn stops. Two daemons soak
// side by side over the same churn, one per task source: the procfs source
// keeps an fd per task, the iterator keeps none, and each has its own ways
// to leak.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak runs for a minute or more")
	}
	cg := testcg.Make(t, testcg.Default())
	// The id label of the test cgroup: Make puts it under the root of
	// the hierarchy the daemon walks.
	own := "/" + filepath.Base(cg)
	var daemons []*soaked
	for _, source := range []string{"auto", "procfs"} {
		d := startBinary(t, plainBinary(t), nil, "--collect.source="+source)
		daemons = append(daemons, &soaked{source: source, d: d, url: "http://" + d.addr + "/metrics", last: map[string]float64{}})
	}
	for _, s := range daemons {
		for range 3 {
			scrape(t, http.DefaultClient, s.url)
		}
	}
	time.Sleep(2 * time.Second)
	for _, s := range daemons {
		s.start = measure(t, s.d, scrape(t, http.DefaultClient, s.url))
	}

	churn := testproc.StartChurnIn(t, cg)
	scrapes := 0
	soak := soakDuration(t)
	end := time.Now().Add(soak)
	for time.Now().Before(end) {
		scrapes++
		for _, s := range daemons {
			mfs := scrape(t, http.DefaultClient, s.url)
			seen := map[string]float64{}
			for _, name := range containerCounters {
				for _, m := range mfs[name].GetMetric() {
					// Only the test's own cgroups: others on the machine
					// may be removed and made again (a new series from 0)
					// by whatever else runs.
					if id := idLabel(m); id != own && !strings.HasPrefix(id, own+"/") {
						continue
					}
					key := name + seriesID(m)
					v := m.GetCounter().GetValue()
					if prev, ok := s.last[key]; ok && v < prev {
						s.decreases++
						t.Errorf("--collect.source=%s: %s fell from %v to %v", s.source, key, prev, v)
					}
					seen[key] = v
				}
			}
			if len(seen) == 0 {
				t.Fatalf("--collect.source=%s: no series of the test cgroup %s", s.source, own)
			}
			s.last = seen
		}
		time.Sleep(time.Second)
	}
	churn.Stop()
	time.Sleep(3 * time.Second) // two passes retire the churned tasks
	// The churn exits a few tasks a second; fewer than one a second means
	// it did not run and the soak proved nothing.
	minExits := soak.Seconds()
	for _, s := range daemons {
		final := scrape(t, http.DefaultClient, s.url)
		stop := measure(t, s.d, final)
		exits := final["schedstatd_task_exits_total"].GetMetric()[0].GetCounter().GetValue()
		// Most churned threads live a millisecond, less than a pass: only
		// exit capture, where it loads, sees them (node-wide).
		var events float64
		if mf := final["schedstatd_exit_events_total"]; mf != nil {
			events = mf.GetMetric()[0].GetCounter().GetValue()
		}
		t.Logf("--collect.source=%s: %d scrapes, %d counter decreases, %.0f tracked tasks exited, %.0f exit events captured", s.source, scrapes, s.decreases, exits, events)
		t.Logf("  start: %v", s.start)
		t.Logf("  end:   %v", stop)
		if grew := stop.rssBytes - s.start.rssBytes; grew > 16<<20 {
			t.Errorf("--collect.source=%s: RSS grew by %.1f MiB, more than 16 MiB", s.source, float64(grew)/(1<<20))
		}
		if stop.otherFDs() > s.start.otherFDs()+8 {
			t.Errorf("--collect.source=%s: fds not kept for tasks: %d -> %d", s.source, s.start.otherFDs(), stop.otherFDs())
		}
		if stop.goroutines > s.start.goroutines+4 {
			t.Errorf("--collect.source=%s: goroutines %d -> %d", s.source, s.start.goroutines, stop.goroutines)
		}
		if exits < minExits {
			t.Errorf("--collect.source=%s: only %.0f task exits in %v: the churn did not run", s.source, exits, soak)
		}
	}
}

// idLabel returns the value of m's id label.
func idLabel(m *dto.Metric) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == "id" {
			return lp.GetValue()
		}
	}
	return ""
}

// seriesID returns the id label of m.
func seriesID(m *dto.Metric) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == "id" {
			return "{id=" + strconv.Quote(lp.GetValue()) + "}"
		}
	}
	return "{}"
}
