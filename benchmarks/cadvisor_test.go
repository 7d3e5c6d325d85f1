package benchmarks_test

import (
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/testkit/baseline"
)

// envCadvisor, set to a listen address, makes the test binary the
// cAdvisor-style reader of BenchmarkDaemon instead of running tests.
const envCadvisor = "SCHEDSTATD_BENCH_CADVISOR"

// cadvisorMain runs the cAdvisor-style reader when the test binary was
// started as one, and returns otherwise. Call it from TestMain.
func cadvisorMain() {
	addr := os.Getenv(envCadvisor)
	if addr == "" {
		return
	}
	if err := runCadvisor(addr); err != nil {
		fmt.Fprintln(os.Stderr, "cadvisor-style reader:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// cadvisorReader reads the node the way cAdvisor's libcontainer handlers
// read schedstat (internal/testkit/baseline): the same cgroupfs walk as the
// daemon's, then a handler per cgroup that reads every task of its subtree
// with os.ReadFile into a pid map; it serves the totals as const metrics
// through client_golang, as cAdvisor does. Every second and on every
// scrape, a pass.
type cadvisorReader struct {
	mu       sync.Mutex
	h        *cgroupfs.Hierarchy
	l        cgroupfs.Listing
	handlers *baseline.Handlers
	passes   int
}

var (
	cadvisorLabels = []string{"id", "name", "container", "pod", "namespace", "image"}
	cadvisorRun    = prometheus.NewDesc("container_cpu_schedstat_run_seconds_total", "Run time.", cadvisorLabels, nil)
	cadvisorWait   = prometheus.NewDesc("container_cpu_schedstat_runqueue_seconds_total", "Runqueue wait.", cadvisorLabels, nil)
	cadvisorSlices = prometheus.NewDesc("container_cpu_schedstat_run_periods_total", "Timeslices.", cadvisorLabels, nil)
	// cadvisorPasses counts passes under the daemon's name for it, so
	// that BenchmarkDaemon reads both the same way.
	cadvisorPasses = prometheus.NewDesc("schedstatd_collections_total", "Passes completed.", nil, nil)
)

func runCadvisor(addr string) error {
	h, err := cgroupfs.Open(os.Getenv("SCHEDSTATD_BENCH_CGROUPFS"), "")
	if err != nil {
		return err
	}
	r := &cadvisorReader{h: h, handlers: baseline.NewPerLevel(baseline.ReadFile("/proc"))}
	r.pass()
	go func() {
		for range time.Tick(time.Second) {
			r.pass()
		}
	}()
	reg := prometheus.NewRegistry()
	reg.MustRegister(r)
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
	http.Handle("/metrics", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.pass()
		metrics.ServeHTTP(w, req)
	}))
	return http.ListenAndServe(addr, nil)
}

// pass lists the hierarchy and updates every handler. A task that exits
// between the listing and its read fails a handler's update; the rest of
// the pass goes on, as cAdvisor logs and goes on.
func (r *cadvisorReader) pass() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.h.List(&r.l); err != nil {
		return
	}
	_ = r.handlers.Pass(&r.l)
	r.passes++
}

// Describe sends nothing: the reader is an unchecked collector.
func (r *cadvisorReader) Describe(chan<- *prometheus.Desc) {}

// Collect sends three series per cgroup of the last pass.
func (r *cadvisorReader) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(cadvisorPasses, prometheus.CounterValue, float64(r.passes))
	for i, st := range r.handlers.Totals {
		if i >= len(r.l.Cgroups) {
			break
		}
		id := cgroupfs.ParseIdentity(r.l.Cgroups[i].Path)
		lv := []string{id.ID, id.Name, "", "", "", ""}
		ch <- prometheus.MustNewConstMetric(cadvisorRun, prometheus.CounterValue, float64(st.RunNanoseconds)/1e9, lv...)
		ch <- prometheus.MustNewConstMetric(cadvisorWait, prometheus.CounterValue, float64(st.WaitNanoseconds)/1e9, lv...)
		ch <- prometheus.MustNewConstMetric(cadvisorSlices, prometheus.CounterValue, float64(st.Timeslices), lv...)
	}
}
