package collector

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/schedstatd/schedstatd/schedlat"
)

// histogramCollector sends one latency histogram.
type histogramCollector struct{ c *schedlat.Counts }

func (h histogramCollector) Describe(ch chan<- *prometheus.Desc) { ch <- latencyDesc }
func (h histogramCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- latencyHistogram(h.c, time.Unix(1e9, 0), []string{"/a", "a", "", "", "", ""})
}

// TestLatencyHistogram checks that one series carries both the native
// buckets, as the program counted them, and classic buckets that count
// the same waits, and that the exposition passes the linter.
func TestLatencyHistogram(t *testing.T) {
	var c schedlat.Counts
	c.Buckets[0] = 3  // at most 2^-20 s: the zero bucket
	c.Buckets[1] = 5  // (2^-20, 2^-19.5] s
	c.Buckets[2] = 7  // (2^-19.5, 2^-19] s
	c.Buckets[21] = 2 // (2^-10, 2^-9.5] s
	c.Buckets[schedlat.Buckets-1] = 1
	// Waits is one ahead, as a read between the program's two additions
	// may find it: the histogram's count is the buckets'.
	c.Waits, c.WaitNanoseconds = 19, 123456789
	var m dto.Metric
	if err := latencyHistogram(&c, time.Unix(1e9, 0), []string{"/a", "a", "", "", "", ""}).Write(&m); err != nil {
		t.Fatal(err)
	}
	h := m.GetHistogram()
	if h.GetSchema() != schedlat.Schema || h.GetZeroThreshold() != schedlat.ZeroThreshold || h.GetZeroCount() != 3 {
		t.Errorf("schema %d, zero threshold %g, zero count %d", h.GetSchema(), h.GetZeroThreshold(), h.GetZeroCount())
	}
	if h.GetSampleCount() != 18 || h.GetSampleSum() != 0.123456789 {
		t.Errorf("count %d, sum %g", h.GetSampleCount(), h.GetSampleSum())
	}
	// Native buckets: indices and counts from the spans and deltas.
	got := map[int32]int64{}
	idx, n := int32(0), int64(0)
	d := 0
	for i, sp := range h.GetPositiveSpan() {
		if i == 0 {
			idx = sp.GetOffset()
		} else {
			idx += sp.GetOffset()
		}
		for range sp.GetLength() {
			n += h.GetPositiveDelta()[d]
			d++
			if n != 0 {
				got[idx] = n
			}
			idx++
		}
	}
	want := map[int32]int64{-39: 5, -38: 7, -19: 2, 12: 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("native bucket %d: %d, want %d (all %v)", k, got[k], v, got)
		}
	}
	// Classic: le=2^-20 holds the zero bucket, le=2^-19 the first three
	// buckets, le=2^-9 the 2 of bucket 21, +Inf (the count) the last one.
	cum := map[float64]uint64{}
	for _, b := range h.GetBucket() {
		cum[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	for le, w := range map[float64]uint64{1.0 / (1 << 20): 3, 1.0 / (1 << 19): 15, 1.0 / (1 << 10): 15, 1.0 / (1 << 9): 17, 4: 17} {
		if cum[le] != w {
			t.Errorf("classic le=%g: %d, want %d", le, cum[le], w)
		}
	}
	if len(h.GetBucket()) != len(schedlat.ClassicBounds) {
		t.Errorf("%d classic buckets, want %d", len(h.GetBucket()), len(schedlat.ClassicBounds))
	}
	problems, err := testutil.CollectAndLint(histogramCollector{&c})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// fixedCounts are a sched_switch program's counts by cgroup id, both
// features on.
type fixedCounts map[uint64]schedlat.Counts

func (f fixedCounts) Read() (map[uint64]schedlat.Counts, error) { return f, nil }
func (f fixedCounts) Forget([]uint64)                           {}
func (f fixedCounts) Latency() bool                             { return true }
func (f fixedCounts) Preemption() bool                          { return true }
func (f fixedCounts) Since() time.Time                          { return time.Unix(1e9, 0) }

// TestSchedLatencySeries checks the exporter's histogram and preemption
// series over the fixture tree: a container's counts show in it and, rolled
// up, in its pod and every ancestor, with the labels of the other series,
// and no cgroup without counts gets a series.
func TestSchedLatencySeries(t *testing.T) {
	e, reg := fixtureExporter(t)
	e.labeler = podLabeler{}
	ids := map[string]uint64{}
	for _, c := range e.poller.Last().Cgroups {
		ids[c.Path] = c.ID
	}
	ctr := podSlice + "/cri-containerd-" + ctrID + ".scope"
	var c schedlat.Counts
	c.Buckets[21] = 4 // (2^-10, 2^-9.5] s
	c.Waits, c.WaitNanoseconds = 4, 4_000_000
	c.Same, c.Other, c.Kernel, c.Caused = 1, 5, 2, 7
	e.schedlat = schedlat.NewRollup(fixedCounts{ids[ctr]: c})

	want := `
# HELP container_cpu_schedstat_preemptions_caused_total Preemptions the cgroup's tasks caused in tasks of other cgroups, descendants included.
# TYPE container_cpu_schedstat_preemptions_caused_total counter
container_cpu_schedstat_preemptions_caused_total{container="",id="/",image="",name="/",namespace="",pod=""} 7
container_cpu_schedstat_preemptions_caused_total{container="",id="/kubepods.slice",image="",name="kubepods.slice",namespace="",pod=""} 7
container_cpu_schedstat_preemptions_caused_total{container="",id="/kubepods.slice/kubepods-burstable.slice",image="",name="kubepods-burstable.slice",namespace="",pod=""} 7
container_cpu_schedstat_preemptions_caused_total{container="",id="` + podSlice + `",image="",name="kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice",namespace="shop",pod="web-0"} 7
container_cpu_schedstat_preemptions_caused_total{container="web",id="` + ctr + `",image="nginx:1.27",name="` + ctrID + `",namespace="shop",pod="web-0"} 7
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "container_cpu_schedstat_preemptions_caused_total"); err != nil {
		t.Error(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "container_cpu_schedstat_runqueue_latency_seconds":
			if len(mf.GetMetric()) != 5 {
				t.Errorf("%d histograms, want the container's and its 4 ancestors'", len(mf.GetMetric()))
			}
			for _, m := range mf.GetMetric() {
				h := m.GetHistogram()
				if h.GetSampleCount() != 4 || h.GetSampleSum() != 0.004 || len(h.GetBucket()) != len(schedlat.ClassicBounds) {
					t.Errorf("histogram %v: count %d, sum %g, %d classic buckets", m.GetLabel(), h.GetSampleCount(), h.GetSampleSum(), len(h.GetBucket()))
				}
			}
		case "container_cpu_schedstat_preemptions_total":
			if len(mf.GetMetric()) != 5*4 {
				t.Errorf("%d preemption series, want 4 each for 5 cgroups", len(mf.GetMetric()))
			}
		}
	}
	problems, err := testutil.CollectAndLint(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}
