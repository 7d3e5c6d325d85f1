package procsource

import "github.com/prometheus/client_golang/prometheus"

var (
	unkeptDesc = prometheus.NewDesc("schedstatd_tasks_unkept",
		"Tracked tasks read by open, read and close each pass because the open-file limit left no fd to keep for them.", nil, nil)
	keptDesc = prometheus.NewDesc("schedstatd_task_fds_kept",
		"Task fds the procfs source keeps open, one per tracked task within the budget.", nil, nil)
	budgetDesc = prometheus.NewDesc("schedstatd_task_fd_budget",
		"Fds the procfs source's tasks and the cgroup walk's counter files may keep open together under the open-file and memory limits.", nil, nil)
	cgroupKeptDesc = prometheus.NewDesc("schedstatd_cgroup_fds_kept",
		"Cgroup counter files (CPU counter, bandwidth, pressure) the walk keeps open and reads with one pread a pass, within the fd budget.", nil, nil)
)

// Collector exports an FDBudget's counts. It may be collected from any
// goroutine.
type Collector struct{ b *FDBudget }

// NewCollector returns a collector of b; b may be nil (the procfs source
// is not in use), and then the tasks unkept are 0 and the rest absent.
func NewCollector(b *FDBudget) *Collector { return &Collector{b} }

// Describe sends the descriptions.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- unkeptDesc
	ch <- keptDesc
	ch <- budgetDesc
	ch <- cgroupKeptDesc
}

// Collect sends the metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c.b == nil {
		ch <- prometheus.MustNewConstMetric(unkeptDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(unkeptDesc, prometheus.GaugeValue, float64(c.b.Unkept()))
	ch <- prometheus.MustNewConstMetric(keptDesc, prometheus.GaugeValue, float64(c.b.Kept()))
	ch <- prometheus.MustNewConstMetric(budgetDesc, prometheus.GaugeValue, float64(c.b.Max))
	ch <- prometheus.MustNewConstMetric(cgroupKeptDesc, prometheus.GaugeValue, float64(c.b.CgroupKept()))
}
