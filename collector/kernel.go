package collector

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/schedstatd/schedstatd/container"
)

// The series of the kernel's own per-cgroup files beside the CPU counter:
// CFS bandwidth from cpu.stat and CPU pressure from cpu.pressure. Their
// names carry the schedstat infix so that none is a name kubelet's
// cAdvisor endpoint serves (container_cpu_cfs_*, container_pressure_cpu_*):
// where Prometheus scrapes both, a query without a job matcher would
// otherwise add the two.
var (
	cfsPeriodsDesc = prometheus.NewDesc("container_cpu_schedstat_cfs_periods_total",
		"CFS bandwidth enforcement periods that had runnable tasks, from cpu.stat nr_periods of the cgroup's own quota (v1 from the cpu hierarchy's cgroup at the same path).", containerLabels, nil)
	cfsThrottledPeriodsDesc = prometheus.NewDesc("container_cpu_schedstat_cfs_throttled_periods_total",
		"CFS periods in which the cgroup's quota ran out, from cpu.stat nr_throttled.", containerLabels, nil)
	cfsThrottledDesc = prometheus.NewDesc("container_cpu_schedstat_cfs_throttled_seconds_total",
		"Time the cgroup's run queues spent throttled by its quota, summed over CPUs, from cpu.stat throttled_time (v1) or throttled_usec (v2). Its rate is a lower bound of the runqueue wait the limit explains.", containerLabels, nil)
	cfsBurstsDesc = prometheus.NewDesc("container_cpu_schedstat_cfs_bursts_total",
		"CFS periods in which the cgroup used its burst allowance, from cpu.stat nr_bursts.", containerLabels, nil)
	cfsBurstDesc = prometheus.NewDesc("container_cpu_schedstat_cfs_burst_seconds_total",
		"CPU time the cgroup ran beyond its quota out of its burst allowance, from cpu.stat burst_time (v1) or burst_usec (v2).", containerLabels, nil)
	pressureSomeDesc = prometheus.NewDesc("container_cpu_schedstat_pressure_some_seconds_total",
		"Wall time in which at least one of the cgroup's runnable tasks waited for a CPU, from cpu.pressure some total (v2; on hybrid nodes the v2 cgroup at the same path).", containerLabels, nil)
	pressureFullDesc = prometheus.NewDesc("container_cpu_schedstat_pressure_full_seconds_total",
		"Wall time in which all of the cgroup's non-idle tasks waited for a CPU at once, from cpu.pressure full total.", containerLabels, nil)
)

// collectKernel sends the bandwidth and pressure series of one cgroup,
// those its listing read, with the label values lv.
func collectKernel(ch chan<- prometheus.Metric, c *container.CgroupStats, lv []string) {
	if b := c.Bandwidth; b.HasThrottling {
		ch <- prometheus.MustNewConstMetric(cfsPeriodsDesc, prometheus.CounterValue, float64(b.Periods), lv...)
		ch <- prometheus.MustNewConstMetric(cfsThrottledPeriodsDesc, prometheus.CounterValue, float64(b.ThrottledPeriods), lv...)
		ch <- prometheus.MustNewConstMetric(cfsThrottledDesc, prometheus.CounterValue, seconds(b.ThrottledNanoseconds), lv...)
	}
	if b := c.Bandwidth; b.HasBursts {
		ch <- prometheus.MustNewConstMetric(cfsBurstsDesc, prometheus.CounterValue, float64(b.Bursts), lv...)
		ch <- prometheus.MustNewConstMetric(cfsBurstDesc, prometheus.CounterValue, seconds(b.BurstNanoseconds), lv...)
	}
	if p := c.Pressure; p.HasSome {
		ch <- prometheus.MustNewConstMetric(pressureSomeDesc, prometheus.CounterValue, seconds(p.SomeNanoseconds), lv...)
	}
	if p := c.Pressure; p.HasFull {
		ch <- prometheus.MustNewConstMetric(pressureFullDesc, prometheus.CounterValue, seconds(p.FullNanoseconds), lv...)
	}
}
