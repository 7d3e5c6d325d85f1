package exitcapture

import "github.com/prometheus/client_golang/prometheus"

var (
	enabledDesc = prometheus.NewDesc("schedstatd_exit_capture_enabled",
		"1 if exit capture is loaded and exited tasks count up to their exit; 0 if the daemon polls only.", nil, nil)
	eventsDesc = prometheus.NewDesc("schedstatd_exit_events_total",
		"Exit records received from the kernel, one per exited task (thread).", nil, nil)
	lostDesc = prometheus.NewDesc("schedstatd_exit_events_lost_total",
		"Exit records lost because the kernel ring buffer or the queue between passes was full; those tasks count up to the last pass that saw them.", nil, nil)
	migrationsDesc = prometheus.NewDesc("schedstatd_migration_events_total",
		"Move records received from the kernel, one per task moved into another cgroup of the walked hierarchy (the thread-group leader alone when a whole process moves).", nil, nil)
	migrationsLostDesc = prometheus.NewDesc("schedstatd_migration_events_lost_total",
		"Move records lost because the queue between passes was full; that task's time since the last pass goes to its new cgroup. Records the ring had no room for are counted in schedstatd_exit_events_lost_total.", nil, nil)
	unattributedDesc = prometheus.NewDesc("schedstatd_exit_events_unattributed_total",
		"Exit records of tasks no pass saw whose cgroup was removed before a pass could list it, credited to the nearest ancestor that exists.", nil, nil)
)

// Collector exports a Source's self metrics. It may be collected from any
// goroutine.
type Collector struct {
	src          *Source
	elsewhere    Elsewhere
	unattributed func() uint64
}

// Elsewhere is exit capture done by another source: the kernel totals'
// own program at sched_process_free (aggregate.Source). HasExitHook
// reports whether it is loaded, Exits how many tasks it took at exit.
type Elsewhere interface {
	HasExitHook() bool
	Exits() uint64
}

// NewCollector returns a collector of src's counts; src may be nil, when
// exit capture is off or unavailable, or done elsewhere (nil if not).
// unattributed returns the table's count of exit records credited to an
// ancestor because their cgroup was gone
// (container.Counters.UnattributedExits).
func NewCollector(src *Source, elsewhere Elsewhere, unattributed func() uint64) *Collector {
	return &Collector{src: src, elsewhere: elsewhere, unattributed: unattributed}
}

// Describe sends the six descriptions.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- enabledDesc
	ch <- eventsDesc
	ch <- lostDesc
	ch <- unattributedDesc
	ch <- migrationsDesc
	ch <- migrationsLostDesc
}

// Collect sends the six metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.Stats()
	enabled := 0.0
	switch {
	case c.src != nil:
		enabled = 1
	case c.elsewhere != nil && c.elsewhere.HasExitHook():
		enabled = 1
		st.Events = c.elsewhere.Exits()
	}
	var un uint64
	if c.unattributed != nil {
		un = c.unattributed()
	}
	ch <- prometheus.MustNewConstMetric(enabledDesc, prometheus.GaugeValue, enabled)
	ch <- prometheus.MustNewConstMetric(eventsDesc, prometheus.CounterValue, float64(st.Events))
	ch <- prometheus.MustNewConstMetric(lostDesc, prometheus.CounterValue, float64(st.Lost))
	ch <- prometheus.MustNewConstMetric(unattributedDesc, prometheus.CounterValue, float64(un))
	ch <- prometheus.MustNewConstMetric(migrationsDesc, prometheus.CounterValue, float64(st.Migrations))
	ch <- prometheus.MustNewConstMetric(migrationsLostDesc, prometheus.CounterValue, float64(st.MigrationsLost))
}
