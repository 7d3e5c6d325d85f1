package aggregate

import "github.com/prometheus/client_golang/prometheus"

var (
	cgroupsDesc = prometheus.NewDesc("schedstatd_kernel_totals_cgroups",
		"Cgroups whose totals the kernel keeps, at the last read: those that exist and those removed in the last half minute.", nil, nil)
	overflowsDesc = prometheus.NewDesc("schedstatd_kernel_totals_overflows_total",
		"Credits the kernel could not file under their cgroup, its totals being full; they went to the root.", nil, nil)
	forgottenDesc = prometheus.NewDesc("schedstatd_kernel_totals_forgotten_total",
		"Totals of removed cgroups the kernel was told to drop, once credited.", nil, nil)
)

// Collector exports a Source's counts. It may be collected from any
// goroutine.
type Collector struct{ src *Source }

// NewCollector returns a collector for src; a nil src exports zeros.
func NewCollector(src *Source) *Collector { return &Collector{src: src} }

// Describe sends the three descriptions.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cgroupsDesc
	ch <- overflowsDesc
	ch <- forgottenDesc
}

// Collect sends the counts.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.Stats()
	ch <- prometheus.MustNewConstMetric(cgroupsDesc, prometheus.GaugeValue, float64(st.Cgroups))
	ch <- prometheus.MustNewConstMetric(overflowsDesc, prometheus.CounterValue, float64(st.Overflows))
	ch <- prometheus.MustNewConstMetric(forgottenDesc, prometheus.CounterValue, float64(st.Forgotten))
}
