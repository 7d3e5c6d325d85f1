package collector

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/schedstatd/schedstatd/container"
)

// containerLabels are the labels of every container series, as kubelet's
// cAdvisor endpoint has them, so dashboards and queries port over.
var containerLabels = []string{"id", "name", "container", "pod", "namespace", "image"}

// family is one metric of the container series: one series per selected
// cgroup that has a value for it. The Collector path and the direct
// render both go through this table, so they serve the same series.
type family struct {
	name, help string
	counter    bool
	// value returns the cgroup's value, and false when it has none.
	value func(c *container.CgroupStats) (float64, bool)
	desc  *prometheus.Desc
}

// valueType returns the family's type for const metrics.
func (f *family) valueType() prometheus.ValueType {
	if f.counter {
		return prometheus.CounterValue
	}
	return prometheus.GaugeValue
}

func always(v float64) (float64, bool) { return v, true }

// families are the container series, in the order they are served. The
// names of the kernel's own per-cgroup files beside the CPU counter (CFS
// bandwidth from cpu.stat, CPU pressure from cpu.pressure) carry the
// schedstat infix so that none is a name kubelet's cAdvisor endpoint
// serves (container_cpu_cfs_*, container_pressure_cpu_*): where
// Prometheus scrapes both, a query without a job matcher would otherwise
// add the two.
var families = newFamilies([]family{
	{name: "container_cpu_schedstat_run_seconds_total", counter: true,
		help:  "Time the cgroup's tasks ran on a CPU, from /proc/<tid>/schedstat, descendants included.",
		value: func(c *container.CgroupStats) (float64, bool) { return always(seconds(c.Stat.RunNanoseconds)) }},
	{name: "container_cpu_schedstat_runqueue_seconds_total", counter: true,
		help:  "Time the cgroup's tasks waited on a runqueue for a CPU, from /proc/<tid>/schedstat, descendants included.",
		value: func(c *container.CgroupStats) (float64, bool) { return always(seconds(c.Stat.WaitNanoseconds)) }},
	{name: "container_cpu_schedstat_run_periods_total", counter: true,
		help:  "Timeslices the cgroup's tasks ran, from /proc/<tid>/schedstat, descendants included.",
		value: func(c *container.CgroupStats) (float64, bool) { return always(float64(c.Stat.Timeslices)) }},
	{name: "container_cpu_schedstat_usage_seconds_total", counter: true,
		help:  "The cgroup's own CPU counter (cpuacct.usage on v1, cpu.stat usage_usec on v2), descendants included.",
		value: func(c *container.CgroupStats) (float64, bool) { return seconds(c.UsageNanoseconds), c.HasUsage }},
	{name: "container_schedstat_tasks",
		help:  "Live tasks (threads) listed in the cgroup and its descendants at the last pass.",
		value: func(c *container.CgroupStats) (float64, bool) { return always(float64(c.Tasks)) }},
	{name: "container_schedstat_read_errors_total", counter: true,
		help:  "Passes that could not read this cgroup whole; shown once the cgroup has had one.",
		value: func(c *container.CgroupStats) (float64, bool) { return float64(c.ReadErrors), c.ReadErrors > 0 }},
	{name: "container_cpu_schedstat_cfs_periods_total", counter: true,
		help: "CFS bandwidth enforcement periods that had runnable tasks, from cpu.stat nr_periods of the cgroup's own quota (v1 from the cpu hierarchy's cgroup at the same path).",
		value: func(c *container.CgroupStats) (float64, bool) {
			return float64(c.Bandwidth.Periods), c.Bandwidth.HasThrottling
		}},
	{name: "container_cpu_schedstat_cfs_throttled_periods_total", counter: true,
		help: "CFS periods in which the cgroup's quota ran out, from cpu.stat nr_throttled.",
		value: func(c *container.CgroupStats) (float64, bool) {
			return float64(c.Bandwidth.ThrottledPeriods), c.Bandwidth.HasThrottling
		}},
	{name: "container_cpu_schedstat_cfs_throttled_seconds_total", counter: true,
		help: "Time the cgroup's run queues spent throttled by its quota, summed over CPUs, from cpu.stat throttled_time (v1) or throttled_usec (v2). Its rate is a lower bound of the runqueue wait the limit explains.",
		value: func(c *container.CgroupStats) (float64, bool) {
			return seconds(c.Bandwidth.ThrottledNanoseconds), c.Bandwidth.HasThrottling
		}},
	{name: "container_cpu_schedstat_cfs_bursts_total", counter: true,
		help: "CFS periods in which the cgroup used its burst allowance, from cpu.stat nr_bursts.",
		value: func(c *container.CgroupStats) (float64, bool) {
			return float64(c.Bandwidth.Bursts), c.Bandwidth.HasBursts
		}},
	{name: "container_cpu_schedstat_cfs_burst_seconds_total", counter: true,
		help: "CPU time the cgroup ran beyond its quota out of its burst allowance, from cpu.stat burst_time (v1) or burst_usec (v2).",
		value: func(c *container.CgroupStats) (float64, bool) {
			return seconds(c.Bandwidth.BurstNanoseconds), c.Bandwidth.HasBursts
		}},
	{name: "container_cpu_schedstat_pressure_some_seconds_total", counter: true,
		help: "Wall time in which at least one of the cgroup's runnable tasks waited for a CPU, from cpu.pressure some total (v2; on hybrid nodes the v2 cgroup at the same path).",
		value: func(c *container.CgroupStats) (float64, bool) {
			return seconds(c.Pressure.SomeNanoseconds), c.Pressure.HasSome
		}},
	{name: "container_cpu_schedstat_pressure_full_seconds_total", counter: true,
		help: "Wall time in which all of the cgroup's non-idle tasks waited for a CPU at once, from cpu.pressure full total.",
		value: func(c *container.CgroupStats) (float64, bool) {
			return seconds(c.Pressure.FullNanoseconds), c.Pressure.HasFull
		}},
})

// newFamilies fills in each family's Desc.
func newFamilies(fs []family) []family {
	for i := range fs {
		fs[i].desc = prometheus.NewDesc(fs[i].name, fs[i].help, containerLabels, nil)
	}
	return fs
}

func seconds(ns uint64) float64 { return float64(ns) / 1e9 }
