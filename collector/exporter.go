package collector

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedlat"
)

const namespace = "schedstatd"

var (
	passesDesc = prometheus.NewDesc(namespace+"_collections_total",
		"Accounting passes completed.", nil, nil)
	failedDesc = prometheus.NewDesc(namespace+"_collection_errors_total",
		"Accounting passes that failed to list the cgroup hierarchy; totals stay as they were.", nil, nil)
	trackedDesc = prometheus.NewDesc(namespace+"_tasks_tracked",
		"Tasks the table tracks; with the procfs source each holds one open file descriptor, with the task iterator none.", nil, nil)
	exitsDesc = prometheus.NewDesc(namespace+"_task_exits_total",
		"Tracked tasks found exited and retired with what was counted for them.", nil, nil)
	reusesDesc = prometheus.NewDesc(namespace+"_task_reuses_total",
		"Thread ids found taken by a new task; the old task kept its time.", nil, nil)
	unlistedDesc = prometheus.NewDesc(namespace+"_task_unlisted_reads_total",
		"Reads of tasks a pass did not list: zombies and tasks that moved mid-walk.", nil, nil)
	readErrorsDesc = prometheus.NewDesc(namespace+"_read_errors_total",
		"Failed reads of tasks that still exist, by reason; each costs at most that task's increase.", []string{"reason"}, nil)
	cgroupErrorsDesc = prometheus.NewDesc(namespace+"_cgroup_read_errors_total",
		"Cgroups that a pass could not read whole (a thread list, CPU counter or directory that failed other than by removal), by reason; what could not be read keeps its last state and its tasks are read on through their handles.", []string{"reason"}, nil)
	partialDesc = prometheus.NewDesc(namespace+"_partial_collections_total",
		"Passes that could not read the whole cgroup tree; what they could not see kept its last state.", nil, nil)
	readShareDesc = prometheus.NewDesc(namespace+"_cgroups_read_ratio",
		"Share of the cgroups of the last pass that it read whole (1 after a complete pass).", nil, nil)
	pendingDesc = prometheus.NewDesc(namespace+"_exit_records_pending",
		"Exit records of tasks no pass saw, waiting for a pass to list their cgroup (made since the last pass).", nil, nil)
	retiredDesc = prometheus.NewDesc(namespace+"_tasks_retired_remembered",
		"Exited tasks remembered until the exit source has delivered their records, so that each counts once.", nil, nil)
	evictedDesc = prometheus.NewDesc(namespace+"_tasks_retired_evicted_total",
		"Exited tasks forgotten, past the bound, before the exit source had delivered their records; a record that comes later would count the task whole.", nil, nil)
	unrecordedDesc = prometheus.NewDesc(namespace+"_tasks_retired_unrecorded_total",
		"Exited tasks forgotten once the exit source had delivered every record that could have been theirs, none being (the ring had no room, or the kernel sent none); what each ran after the last pass that read it is not counted.", nil, nil)
	lastPassDesc = prometheus.NewDesc(namespace+"_last_collection_timestamp_seconds",
		"Unix time of the last completed pass.", nil, nil)
	cgroupsDesc = prometheus.NewDesc(namespace+"_cgroups",
		"Cgroups in the walked hierarchy at the last pass.", nil, nil)
	selectedDesc = prometheus.NewDesc(namespace+"_cgroups_selected",
		"Cgroups of the last pass whose container series are served (--collect.cgroups.include, --collect.cgroups.exclude and --collect.cgroups.max-depth).", nil, nil)
)

// Exporter is an unchecked prometheus.Collector of a Poller's latest
// snapshot: the container series of its selected cgroups and the
// poller's own counters. It may be collected from any goroutine.
type Exporter struct {
	poller    *Poller
	labeler   Labeler
	selection *Selection
	// labels holds each cgroup's label values, built once per cgroup.
	labels labelCache
	// schedlat, if set, gives the runqueue latency and preemption series.
	schedlat *schedlat.Rollup
}

// ContainerLabels are the Kubernetes names of a cgroup's container or pod.
// Empty fields are unknown.
type ContainerLabels struct {
	Container, Pod, Namespace, Image string
}

// Labeler names the container or pod behind a cgroup, such as from the
// container runtime. Labels is called during every scrape, from any
// goroutine, and must answer from memory without blocking.
type Labeler interface {
	Labels(id cgroupfs.Identity) ContainerLabels
}

// Option configures an Exporter.
type Option func(*Exporter)

// WithLabeler fills the container, pod, namespace and image labels from l.
func WithLabeler(l Labeler) Option { return func(e *Exporter) { e.labeler = l } }

// WithSelection serves the container series of the cgroups s selects
// only; nil selects all.
func WithSelection(s *Selection) Option { return func(e *Exporter) { e.selection = s } }

// NewExporter returns an exporter of p's snapshots.
func NewExporter(p *Poller, opts ...Option) *Exporter {
	e := &Exporter{poller: p}
	for _, o := range opts {
		o(e)
	}
	return e
}

// Describe sends nothing: the exporter is unchecked, since its series come
// and go with cgroups.
func (e *Exporter) Describe(chan<- *prometheus.Desc) {}

// Collect sends the container series of every selected cgroup in the
// poller's kept snapshot (Poller.Kept) and the poller's own counters of
// the latest.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	e.collectContainers(ch, e.poller.Kept())
	e.collectSelf(ch, e.poller.Last())
}

// Containers returns a collector of the container series alone, of the
// poller's kept snapshot.
func (e *Exporter) Containers() prometheus.Collector {
	return collectorFunc(func(ch chan<- prometheus.Metric) { e.collectContainers(ch, e.poller.Kept()) })
}

// Self returns a collector of the poller's own counters alone.
func (e *Exporter) Self() prometheus.Collector {
	return collectorFunc(func(ch chan<- prometheus.Metric) { e.collectSelf(ch, e.poller.Last()) })
}

// collectorFunc is an unchecked collector that sends what the function
// sends.
type collectorFunc func(ch chan<- prometheus.Metric)

func (collectorFunc) Describe(chan<- *prometheus.Desc)      {}
func (f collectorFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }

// collectContainers sends the container series of the selected cgroups
// of s, family by family.
func (e *Exporter) collectContainers(ch chan<- prometheus.Metric, s *container.Snapshot) {
	ls := e.labels.resolve(s, e.labeler, e.selection)
	for i := range s.Cgroups {
		if !ls[i].selected {
			continue
		}
		for j := range families {
			f := &families[j]
			if v, ok := f.value(&s.Cgroups[i]); ok {
				ch <- prometheus.MustNewConstMetric(f.desc, f.valueType(), v, ls[i].values...)
			}
		}
	}
	e.collectLatency(ch, s, ls)
}

// Latency returns a collector of the runqueue latency and preemption
// series alone, of the selected cgroups.
func (e *Exporter) Latency() prometheus.Collector {
	return collectorFunc(func(ch chan<- prometheus.Metric) {
		if e.schedlat.Counter() == nil {
			return
		}
		s := e.poller.Kept()
		e.collectLatency(ch, s, e.labels.resolve(s, e.labeler, e.selection))
	})
}

// collectLatency sends the runqueue latency and preemption series of the
// selected cgroups of s, whose labels are ls. (collectSchedLatency
// appends a label to a cgroup's values: they are made with no room to
// spare, so the append copies and the cached values stay as they are.)
func (e *Exporter) collectLatency(ch chan<- prometheus.Metric, s *container.Snapshot, ls []*cgroupLabels) {
	lat := e.schedLatencyTotals(s)
	if lat == nil {
		return
	}
	since := e.schedlat.Since()
	for i := range s.Cgroups {
		if !ls[i].selected {
			continue
		}
		if l, ok := lat[s.Cgroups[i].Path]; ok {
			collectSchedLatency(ch, e.schedlat.Counter(), since, &l, ls[i].values)
		}
	}
}

// collectSelf sends the poller's own counters as of s.
func (e *Exporter) collectSelf(ch chan<- prometheus.Metric, s *container.Snapshot) {
	c := s.Counters
	counter(ch, passesDesc, float64(c.Passes))
	counter(ch, failedDesc, float64(c.FailedPasses))
	counter(ch, exitsDesc, float64(c.Exits))
	counter(ch, reusesDesc, float64(c.Reuses))
	counter(ch, unlistedDesc, float64(c.Unlisted))
	counter(ch, partialDesc, float64(c.PartialPasses))
	counter(ch, evictedDesc, float64(c.RetiredEvicted))
	counter(ch, unrecordedDesc, float64(c.RetiredUnrecorded))
	ch <- prometheus.MustNewConstMetric(trackedDesc, prometheus.GaugeValue, float64(c.Tracked))
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(c.PendingExits))
	ch <- prometheus.MustNewConstMetric(retiredDesc, prometheus.GaugeValue, float64(c.RetiredTracked))
	if n := c.CgroupsRead + c.CgroupsUnread; n > 0 {
		ch <- prometheus.MustNewConstMetric(readShareDesc, prometheus.GaugeValue, float64(c.CgroupsRead)/float64(n))
	}
	ch <- prometheus.MustNewConstMetric(cgroupsDesc, prometheus.GaugeValue, float64(len(s.Cgroups)))
	ch <- prometheus.MustNewConstMetric(selectedDesc, prometheus.GaugeValue, float64(e.labels.selected(s, e.selection)))
	for _, r := range container.Reasons() {
		ch <- prometheus.MustNewConstMetric(readErrorsDesc, prometheus.CounterValue, float64(c.ReadErrorsFor(r)), r.String())
		ch <- prometheus.MustNewConstMetric(cgroupErrorsDesc, prometheus.CounterValue, float64(c.CgroupReadErrorsFor(r)), r.String())
	}
	if !s.Time.IsZero() {
		ch <- prometheus.MustNewConstMetric(lastPassDesc, prometheus.GaugeValue, float64(s.Time.UnixNano())/1e9)
	}
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
}
