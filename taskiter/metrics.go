package taskiter

import "github.com/prometheus/client_golang/prometheus"

var (
	sourceDesc = prometheus.NewDesc("schedstatd_task_source",
		"1 for the task source in use: iter (one BPF task iterator read per pass) or procfs (cgroup thread lists and a read per task).", []string{"source"}, nil)
	readsDesc = prometheus.NewDesc("schedstatd_task_iterator_reads_total",
		"Completed reads of the BPF task iterator, one per pass.", nil, nil)
	tasksDesc = prometheus.NewDesc("schedstatd_task_iterator_tasks",
		"Tasks the last read of the BPF task iterator saw, zombies included.", nil, nil)
	unresolvedDesc = prometheus.NewDesc("schedstatd_task_iterator_unresolved_total",
		"Live tasks whose cgroup the walk after the iterator's read did not find; they were credited to the cgroup they were last seen in.", nil, nil)
)

// Collector exports which task source is in use and a Source's counts. It
// may be collected from any goroutine.
type Collector struct{ src *Source }

// NewCollector returns a collector for src; a nil src means the procfs
// source is in use.
func NewCollector(src *Source) *Collector { return &Collector{src: src} }

// Describe sends the four descriptions.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sourceDesc
	ch <- readsDesc
	ch <- tasksDesc
	ch <- unresolvedDesc
}

// Collect sends the source in use and, for the iterator, its counts.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	iter, procfs := 0.0, 1.0
	if c.src != nil {
		iter, procfs = 1, 0
	}
	ch <- prometheus.MustNewConstMetric(sourceDesc, prometheus.GaugeValue, iter, "iter")
	ch <- prometheus.MustNewConstMetric(sourceDesc, prometheus.GaugeValue, procfs, "procfs")
	st := c.src.Stats()
	ch <- prometheus.MustNewConstMetric(readsDesc, prometheus.CounterValue, float64(st.Reads))
	ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, float64(st.Tasks))
	ch <- prometheus.MustNewConstMetric(unresolvedDesc, prometheus.CounterValue, float64(st.Unresolved))
}
