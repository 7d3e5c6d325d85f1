package collector

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedlat"
)

// The series of the sched_switch program (--collect.latency,
// --collect.preemption), one per cgroup that has any, descendants
// included as for the other container series.
var (
	latencyDesc = prometheus.NewDesc("container_cpu_schedstat_runqueue_latency_seconds",
		"Runqueue waits of the cgroup's tasks, one per timeslice, from becoming runnable to running, descendants included; derived from each task's run_delay and pcount at its switches away, so the sum and count follow container_cpu_schedstat_runqueue_seconds_total and container_cpu_schedstat_run_periods_total. A native histogram (schema 1) with classic buckets beside it.", containerLabels, nil)
	preemptionsDesc = prometheus.NewDesc("container_cpu_schedstat_preemptions_total",
		"Switches away from the cgroup's tasks while still runnable (preemptions), descendants included, by who ran next: a task of the same cgroup (same), of another cgroup (other), a kernel thread (kernel), or the idle task (idle).", append(containerLabels[:len(containerLabels):len(containerLabels)], "by"), nil)
	preemptionsCausedDesc = prometheus.NewDesc("container_cpu_schedstat_preemptions_caused_total",
		"Preemptions the cgroup's tasks caused in tasks of other cgroups, descendants included.", containerLabels, nil)
)

// WithSchedLatency serves the runqueue latency histogram and the
// preemption counts of r's source, when it has one.
func WithSchedLatency(r *schedlat.Rollup) Option { return func(e *Exporter) { e.schedlat = r } }

// collectSchedLatency sends one cgroup's histogram and preemption counts,
// counted since since.
func collectSchedLatency(ch chan<- prometheus.Metric, src schedlat.Counter, since time.Time, c *schedlat.Counts, lv []string) {
	if src.Latency() {
		ch <- latencyHistogram(c, since, lv)
	}
	if src.Preemption() {
		for _, p := range []struct {
			by string
			n  uint64
		}{{"same", c.Same}, {"other", c.Other}, {"kernel", c.Kernel}, {"idle", c.Idle}} {
			ch <- prometheus.MustNewConstMetric(preemptionsDesc, prometheus.CounterValue, float64(p.n), append(lv, p.by)...)
		}
		ch <- prometheus.MustNewConstMetric(preemptionsCausedDesc, prometheus.CounterValue, float64(c.Caused), lv...)
	}
}

// latencyHistogram returns c's histogram as one metric with both native
// buckets and the classic ones.
func latencyHistogram(c *schedlat.Counts, since time.Time, lv []string) prometheus.Metric {
	native := map[int]int64{}
	// The count is the buckets' total: the program adds to the count and
	// to a bucket one after the other, and a read between the two would
	// otherwise see them disagree. Each only grows.
	count := c.Buckets[0]
	for b := 1; b < len(c.Buckets); b++ {
		if n := c.Buckets[b]; n > 0 {
			native[schedlat.NativeIndex(b)] = int64(n)
			count += n
		}
	}
	sum := seconds(c.WaitNanoseconds)
	m := prometheus.MustNewConstNativeHistogram(latencyDesc, count, sum, native, nil, c.Buckets[0],
		schedlat.Schema, schedlat.ZeroThreshold, since, lv...)
	return &bothHistogram{Metric: m, classic: schedlat.Classic(c)}
}

// bothHistogram is a native histogram that carries classic buckets too,
// as client_golang's own histograms do when both are configured: the text
// format shows the classic buckets, the protobuf format both.
type bothHistogram struct {
	prometheus.Metric
	classic []uint64 // cumulative counts at schedlat.ClassicBounds
}

// Write writes the native histogram and adds the classic buckets.
func (h *bothHistogram) Write(out *dto.Metric) error {
	if err := h.Metric.Write(out); err != nil {
		return err
	}
	bs := make([]*dto.Bucket, len(h.classic))
	for i, n := range h.classic {
		bs[i] = &dto.Bucket{CumulativeCount: new(n), UpperBound: new(schedlat.ClassicBounds[i])}
	}
	out.Histogram.Bucket = bs
	return nil
}

// schedLatencyTotals returns the rolled-up counts for s, nil without a
// source or when the read fails (the series are then left out of this
// scrape).
func (e *Exporter) schedLatencyTotals(s *container.Snapshot) map[string]schedlat.Counts {
	if e.schedlat.Counter() == nil {
		return nil
	}
	t, err := e.schedlat.Totals(s)
	if err != nil {
		return nil
	}
	return t
}
