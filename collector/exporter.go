package collector

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedlat"
)

const namespace = "schedstatd"

// containerLabels are the labels of every container series, as kubelet's
// cAdvisor endpoint has them, so dashboards and queries port over.
var containerLabels = []string{"id", "name", "container", "pod", "namespace", "image"}

var (
	runDesc = prometheus.NewDesc("container_cpu_schedstat_run_seconds_total",
		"Time the cgroup's tasks ran on a CPU, from /proc/<tid>/schedstat, descendants included.", containerLabels, nil)
	waitDesc = prometheus.NewDesc("container_cpu_schedstat_runqueue_seconds_total",
		"Time the cgroup's tasks waited on a runqueue for a CPU, from /proc/<tid>/schedstat, descendants included.", containerLabels, nil)
	periodsDesc = prometheus.NewDesc("container_cpu_schedstat_run_periods_total",
		"Timeslices the cgroup's tasks ran, from /proc/<tid>/schedstat, descendants included.", containerLabels, nil)
	usageDesc = prometheus.NewDesc("container_cpu_schedstat_usage_seconds_total",
		"The cgroup's own CPU counter (cpuacct.usage on v1, cpu.stat usage_usec on v2), descendants included.", containerLabels, nil)
	tasksDesc = prometheus.NewDesc("container_schedstat_tasks",
		"Live tasks (threads) listed in the cgroup and its descendants at the last pass.", containerLabels, nil)

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
	cgroupReadErrorsDesc = prometheus.NewDesc("container_schedstat_read_errors_total",
		"Passes that could not read this cgroup whole; shown once the cgroup has had one.", containerLabels, nil)
	lastPassDesc = prometheus.NewDesc(namespace+"_last_collection_timestamp_seconds",
		"Unix time of the last completed pass.", nil, nil)
	cgroupsDesc = prometheus.NewDesc(namespace+"_cgroups",
		"Cgroups in the walked hierarchy at the last pass.", nil, nil)
)

// Exporter is an unchecked prometheus.Collector of a Poller's latest
// snapshot. It may be collected from any goroutine.
type Exporter struct {
	poller  *Poller
	labeler Labeler
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

// Collect sends the container series of every cgroup in the latest
// snapshot and the poller's own counters.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	s := e.poller.Last()
	lat := e.schedLatencyTotals(s)
	for i := range s.Cgroups {
		e.collectCgroup(ch, &s.Cgroups[i], lat)
	}
	c := s.Counters
	counter(ch, passesDesc, float64(c.Passes))
	counter(ch, failedDesc, float64(c.FailedPasses))
	counter(ch, exitsDesc, float64(c.Exits))
	counter(ch, reusesDesc, float64(c.Reuses))
	counter(ch, unlistedDesc, float64(c.Unlisted))
	counter(ch, partialDesc, float64(c.PartialPasses))
	counter(ch, evictedDesc, float64(c.RetiredEvicted))
	ch <- prometheus.MustNewConstMetric(trackedDesc, prometheus.GaugeValue, float64(c.Tracked))
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(c.PendingExits))
	ch <- prometheus.MustNewConstMetric(retiredDesc, prometheus.GaugeValue, float64(c.RetiredTracked))
	if n := c.CgroupsRead + c.CgroupsUnread; n > 0 {
		ch <- prometheus.MustNewConstMetric(readShareDesc, prometheus.GaugeValue, float64(c.CgroupsRead)/float64(n))
	}
	ch <- prometheus.MustNewConstMetric(cgroupsDesc, prometheus.GaugeValue, float64(len(s.Cgroups)))
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

// collectCgroup sends the container series of one cgroup.
func (e *Exporter) collectCgroup(ch chan<- prometheus.Metric, c *container.CgroupStats, lat map[string]schedlat.Counts) {
	id := cgroupfs.ParseIdentity(c.Path)
	var k ContainerLabels
	if e.labeler != nil {
		k = e.labeler.Labels(id)
	}
	// A cgroup name is any bytes; a label value must be UTF-8.
	lv := []string{cgroupfs.LabelValue(c.Path), cgroupfs.LabelValue(id.Name), k.Container, k.Pod, k.Namespace, k.Image}
	ch <- prometheus.MustNewConstMetric(runDesc, prometheus.CounterValue, seconds(c.Stat.RunNanoseconds), lv...)
	ch <- prometheus.MustNewConstMetric(waitDesc, prometheus.CounterValue, seconds(c.Stat.WaitNanoseconds), lv...)
	ch <- prometheus.MustNewConstMetric(periodsDesc, prometheus.CounterValue, float64(c.Stat.Timeslices), lv...)
	if c.HasUsage {
		ch <- prometheus.MustNewConstMetric(usageDesc, prometheus.CounterValue, seconds(c.UsageNanoseconds), lv...)
	}
	ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, float64(c.Tasks), lv...)
	if c.ReadErrors > 0 {
		ch <- prometheus.MustNewConstMetric(cgroupReadErrorsDesc, prometheus.CounterValue, float64(c.ReadErrors), lv...)
	}
	collectKernel(ch, c, lv)
	if l, ok := lat[c.Path]; ok {
		collectSchedLatency(ch, e.schedlat.Counter(), &l, lv)
	}
}

func seconds(ns uint64) float64 { return float64(ns) / 1e9 }
