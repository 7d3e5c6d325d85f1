package state

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	restoreDesc = prometheus.NewDesc("schedstatd_state_restore",
		"1 for the outcome of loading the state file at start: restored, or why not (disabled, missing, truncated, corrupt, not_state, newer, foreign, unreadable, rejected, locked, unwritable).", []string{"result"}, nil)
	writesDesc = prometheus.NewDesc("schedstatd_state_writes_total",
		"State files written whole.", nil, nil)
	failuresDesc = prometheus.NewDesc("schedstatd_state_write_failures_total",
		"State file writes that failed; the daemon runs on, and a restart would start the counters from the last good write.", nil, nil)
	bytesDesc = prometheus.NewDesc("schedstatd_state_bytes",
		"Size of the last state file written.", nil, nil)
	durationDesc = prometheus.NewDesc("schedstatd_state_write_duration_seconds",
		"Time the last good state write took: encoding, writing, syncing and renaming.", nil, nil)
	ageDesc = prometheus.NewDesc("schedstatd_state_last_write_age_seconds",
		"Time since the last good state write; absent before the first.", nil, nil)
	resumedDesc = prometheus.NewDesc("schedstatd_state_resumed_tasks",
		"Tasks of the state file found alive at start and continued from their saved counters.", nil, nil)
	filledDesc = prometheus.NewDesc("schedstatd_state_filled_run_seconds",
		"Run time of tasks that exited while no daemon watched, taken at start from the cgroups' own CPU counters.", nil, nil)
	lateDesc = prometheus.NewDesc("schedstatd_state_late_exit_records_total",
		"Exit records that came after the first pass since start for tasks that exited before it: they added wait and timeslices, their run was filled.", nil, nil)
)

// Describe implements prometheus.Collector.
func (k *Keeper) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{restoreDesc, writesDesc, failuresDesc, bytesDesc, durationDesc, ageDesc, resumedDesc, filledDesc, lateDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (k *Keeper) Collect(ch chan<- prometheus.Metric) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range Results {
		v := 0.0
		if r == k.result {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(restoreDesc, prometheus.GaugeValue, v, r)
	}
	ch <- prometheus.MustNewConstMetric(writesDesc, prometheus.CounterValue, float64(k.writes))
	ch <- prometheus.MustNewConstMetric(failuresDesc, prometheus.CounterValue, float64(k.failures))
	ch <- prometheus.MustNewConstMetric(bytesDesc, prometheus.GaugeValue, float64(k.bytes))
	ch <- prometheus.MustNewConstMetric(durationDesc, prometheus.GaugeValue, k.duration.Seconds())
	if !k.lastGood.IsZero() {
		ch <- prometheus.MustNewConstMetric(ageDesc, prometheus.GaugeValue, time.Since(k.lastGood).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(resumedDesc, prometheus.GaugeValue, float64(k.stats.TasksResumed))
	ch <- prometheus.MustNewConstMetric(filledDesc, prometheus.GaugeValue, float64(k.stats.FilledRunNanoseconds)/1e9)
	ch <- prometheus.MustNewConstMetric(lateDesc, prometheus.CounterValue, float64(k.stats.LateExits))
}
