package schedlat

import "github.com/prometheus/client_golang/prometheus"

var (
	latencyEnabledDesc = prometheus.NewDesc("schedstatd_runqueue_latency_enabled",
		"1 if the runqueue latency histogram (--collect.latency) is loaded and served; 0 if off or unavailable.", nil, nil)
	preemptionEnabledDesc = prometheus.NewDesc("schedstatd_preemption_tracking_enabled",
		"1 if preemption attribution (--collect.preemption) is loaded and served; 0 if off or unavailable.", nil, nil)
	unavailableDesc = prometheus.NewDesc("schedstatd_sched_switch_program_unavailable",
		"1 if --collect.latency or --collect.preemption was asked for but the kernel or the privileges refused the program (Linux 5.10 and older have no BPF task storage); 0 otherwise.", nil, nil)
	lostDesc = prometheus.NewDesc("schedstatd_sched_switch_lost_total",
		"Switches the program could not count, by reason: cgroups (the stats map was full), pairs (the pair map was full), task_storage (the kernel gave no task storage).", []string{"reason"}, nil)
	unattributedDesc = prometheus.NewDesc("schedstatd_sched_switch_unattributed_total",
		"Cgroups whose waits and preemptions were counted in the root because no pass listed them (made and removed between two passes).", nil, nil)
)

// Collector exports a Source's self metrics. It may be collected from any
// goroutine.
type Collector struct {
	rollup      *Rollup
	unavailable bool
}

// NewCollector returns a collector of the source r rolls up (nil when
// off or unavailable); unavailable says the program was asked for and
// refused.
func NewCollector(r *Rollup, unavailable bool) *Collector {
	return &Collector{rollup: r, unavailable: unavailable}
}

// Describe sends the descriptions.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- latencyEnabledDesc
	ch <- preemptionEnabledDesc
	ch <- unavailableDesc
	ch <- lostDesc
	ch <- unattributedDesc
}

// Collect sends the metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	src := c.rollup.Source()
	ch <- prometheus.MustNewConstMetric(latencyEnabledDesc, prometheus.GaugeValue, boolFloat(src.Latency()))
	ch <- prometheus.MustNewConstMetric(preemptionEnabledDesc, prometheus.GaugeValue, boolFloat(src.Preemption()))
	ch <- prometheus.MustNewConstMetric(unavailableDesc, prometheus.GaugeValue, boolFloat(c.unavailable))
	l := src.Lost()
	ch <- prometheus.MustNewConstMetric(lostDesc, prometheus.CounterValue, float64(l.Cgroups), "cgroups")
	ch <- prometheus.MustNewConstMetric(lostDesc, prometheus.CounterValue, float64(l.Pairs), "pairs")
	ch <- prometheus.MustNewConstMetric(lostDesc, prometheus.CounterValue, float64(l.Tasks), "task_storage")
	ch <- prometheus.MustNewConstMetric(unattributedDesc, prometheus.CounterValue, float64(c.rollup.Unattributed()))
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
