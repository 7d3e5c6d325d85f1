package taskiter

import "github.com/prometheus/client_golang/prometheus"

var (
	sourceDesc = prometheus.NewDesc("schedstatd_task_source",
		"1 for the task source in use: aggregate (per-cgroup totals kept in the kernel by a BPF task iterator), iter (one BPF task iterator read per pass) or procfs (cgroup thread lists and a read per task).", []string{"source"}, nil)
	readsDesc = prometheus.NewDesc("schedstatd_task_iterator_reads_total",
		"Completed reads of the BPF task iterator, one per pass.", nil, nil)
	tasksDesc = prometheus.NewDesc("schedstatd_task_iterator_tasks",
		"Tasks the last read of the BPF task iterator saw, zombies included.", nil, nil)
	unresolvedDesc = prometheus.NewDesc("schedstatd_task_iterator_unresolved_total",
		"Live tasks whose cgroup the walk after the iterator's read did not find; they were credited to the cgroup they were last seen in.", nil, nil)
)

// Collector exports which task source is in use and a Source's counts. It
// may be collected from any goroutine.
type Collector struct {
	src   *Source
	inUse string
}

// Sources are the task sources schedstatd_task_source names.
var Sources = []string{"aggregate", "iter", "procfs"}

// NewCollector returns a collector for src; a nil src means the procfs
// source is in use.
func NewCollector(src *Source) *Collector {
	if src == nil {
		return NewCollectorInUse(nil, "procfs")
	}
	return NewCollectorInUse(src, "iter")
}

// NewCollectorInUse returns a collector for src (nil when the iterator is
// not the source) that says inUse, one of Sources, is the source in use.
func NewCollectorInUse(src *Source, inUse string) *Collector {
	return &Collector{src: src, inUse: inUse}
}

// Describe sends the four descriptions.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sourceDesc
	ch <- readsDesc
	ch <- tasksDesc
	ch <- unresolvedDesc
}

// Collect sends the source in use and, for the iterator, its counts.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, name := range Sources {
		v := 0.0
		if name == c.inUse {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(sourceDesc, prometheus.GaugeValue, v, name)
	}
	st := c.src.Stats()
	ch <- prometheus.MustNewConstMetric(readsDesc, prometheus.CounterValue, float64(st.Reads))
	ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, float64(st.Tasks))
	ch <- prometheus.MustNewConstMetric(unresolvedDesc, prometheus.CounterValue, float64(st.Unresolved))
}
