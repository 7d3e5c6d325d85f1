package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/schedstatd/schedstatd/internal/testcg"
	"github.com/schedstatd/schedstatd/internal/testproc"
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
	rssBytes, fds, goroutines, tracked, unkept int
}

// otherFDs returns the fds that are not kept for a tracked task: the
// tasks on the node come and go with whatever else runs, the rest must not.
func (r resources) otherFDs() int { return r.fds - (r.tracked - r.unkept) }

func (r resources) String() string {
	return fmt.Sprintf("RSS %.1f MiB, %d fds (%d not for tasks), %d goroutines, %d tasks tracked", float64(r.rssBytes)/(1<<20), r.fds, r.otherFDs(), r.goroutines, r.tracked)
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
	r.goroutines = int(mfs["go_goroutines"].GetMetric()[0].GetGauge().GetValue())
	r.tracked = int(mfs["schedstatd_tasks_tracked"].GetMetric()[0].GetGauge().GetValue())
	r.unkept = int(mfs["schedstatd_tasks_unkept"].GetMetric()[0].GetGauge().GetValue())
	return r
}

// TestSoak runs the daemon under continuous thread and process churn in a
// test cgroup, scraping every second: no counter may ever fall, and memory,
// fds and goroutines must come back once the churn stops.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak runs for a minute or more")
	}
	cg := testcg.Make(t, "cpuacct")
	d := startBinary(t, plainBinary(t), nil)
	url := "http://" + d.addr + "/metrics"
	for range 3 {
		scrape(t, http.DefaultClient, url)
	}
	time.Sleep(2 * time.Second)
	start := measure(t, d, scrape(t, http.DefaultClient, url))

	churn := testproc.StartChurnIn(t, cg)
	last := map[string]float64{}
	decreases, scrapes := 0, 0
	end := time.Now().Add(soakDuration(t))
	for time.Now().Before(end) {
		mfs := scrape(t, http.DefaultClient, url)
		scrapes++
		seen := map[string]float64{}
		for _, name := range containerCounters {
			for _, m := range mfs[name].GetMetric() {
				key := name + seriesID(m)
				v := m.GetCounter().GetValue()
				if prev, ok := last[key]; ok && v < prev {
					decreases++
					t.Errorf("%s fell from %v to %v", key, prev, v)
				}
				seen[key] = v
			}
		}
		last = seen
		time.Sleep(time.Second)
	}
	churn.Stop()
	time.Sleep(3 * time.Second) // two passes retire the churned tasks
	final := scrape(t, http.DefaultClient, url)
	stop := measure(t, d, final)
	exits := final["schedstatd_task_exits_total"].GetMetric()[0].GetCounter().GetValue()
	t.Logf("%d scrapes, %d counter decreases, %.0f task exits seen", scrapes, decreases, exits)
	t.Logf("start: %v", start)
	t.Logf("end:   %v", stop)
	if grew := stop.rssBytes - start.rssBytes; grew > 16<<20 {
		t.Errorf("RSS grew by %.1f MiB, more than 16 MiB", float64(grew)/(1<<20))
	}
	if stop.otherFDs() > start.otherFDs()+8 {
		t.Errorf("fds not kept for tasks: %d -> %d", start.otherFDs(), stop.otherFDs())
	}
	if stop.goroutines > start.goroutines+4 {
		t.Errorf("goroutines %d -> %d", start.goroutines, stop.goroutines)
	}
	if exits < 100 {
		t.Errorf("only %.0f task exits: the churn did not run", exits)
	}
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
