package top

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"

	dto "github.com/prometheus/client_model/go"
)

// The runqueue latency histogram and the preemption pairs, served when
// the daemon runs with --collect.latency and --collect.preemption.
const (
	latencyMetric           = "container_cpu_schedstat_runqueue_latency_seconds"
	preemptionEnabledMetric = "schedstatd_preemption_tracking_enabled"
	preemptionsPath         = "/api/v1/preemptions"
)

// Bucket is one classic histogram bucket: waits of at most UpperBound
// seconds, a cumulative count (or, in a Row, its increase per second).
type Bucket struct {
	UpperBound, Count float64
}

// Preemptor is the main preemptor of a cgroup over the daemon's last
// window: who ran most often when its tasks were switched away while
// still runnable.
type Preemptor struct {
	// Label names it: its container, pod or cgroup path, or "kernel".
	Label string
	// PerSecond is its preemptions per second.
	PerSecond float64
}

// latencyBuckets returns a histogram metric's classic buckets.
func latencyBuckets(m *dto.Metric) []Bucket {
	h := m.GetHistogram()
	bs := make([]Bucket, 0, len(h.GetBucket())+1)
	for _, b := range h.GetBucket() {
		bs = append(bs, Bucket{UpperBound: b.GetUpperBound(), Count: float64(b.GetCumulativeCount())})
	}
	return append(bs, Bucket{UpperBound: math.Inf(1), Count: float64(h.GetSampleCount())})
}

// histIncrease returns the per-second increase of each bucket from prev to
// cur, nil unless both have the same bounds. A count that went down was
// reset: all of cur is new, as increase has it.
func histIncrease(prev, cur []Bucket, sec float64) []Bucket {
	if len(prev) != len(cur) || len(cur) == 0 {
		return nil
	}
	reset := false
	for i := range cur {
		if cur[i].UpperBound != prev[i].UpperBound {
			return nil
		}
		reset = reset || cur[i].Count < prev[i].Count
	}
	out := make([]Bucket, len(cur))
	for i := range cur {
		d := cur[i].Count - prev[i].Count
		if reset {
			d = cur[i].Count
		}
		out[i] = Bucket{UpperBound: cur[i].UpperBound, Count: d / sec}
	}
	return out
}

// addHist adds b to a bucket by bucket; nil when the bounds differ.
func addHist(a, b []Bucket) []Bucket {
	if a == nil {
		return append([]Bucket(nil), b...)
	}
	if len(a) != len(b) {
		return nil
	}
	for i := range a {
		if a[i].UpperBound != b[i].UpperBound {
			return nil
		}
		a[i].Count += b[i].Count
	}
	return a
}

// P99Wait returns the 99th percentile of the row's single runqueue waits,
// in seconds, over the interval, interpolated within its bucket as
// Prometheus's histogram_quantile does; false without a histogram or
// without waits.
func (r Row) P99Wait() (float64, bool) {
	return quantile(0.99, r.WaitHist)
}

func quantile(q float64, bs []Bucket) (float64, bool) {
	if len(bs) == 0 || bs[len(bs)-1].Count <= 0 {
		return 0, false
	}
	rank := q * bs[len(bs)-1].Count
	lower, below := 0.0, 0.0
	for _, b := range bs {
		if b.Count >= rank {
			if math.IsInf(b.UpperBound, 1) {
				return lower, true // the highest finite bound, as Prometheus
			}
			if b.Count == below {
				return b.UpperBound, true
			}
			return lower + (b.UpperBound-lower)*(rank-below)/(b.Count-below), true
		}
		lower, below = b.UpperBound, b.Count
	}
	return lower, true
}

// preemptionsJSON is what the daemon's /api/v1/preemptions answers, as
// much of it as top reads.
type preemptionsJSON struct {
	Top []struct {
		Victim    preemptionsCgroup `json:"victim"`
		Preemptor preemptionsCgroup `json:"preemptor"`
		PerSecond float64           `json:"per_second"`
	} `json:"top"`
}

type preemptionsCgroup struct {
	ID        string `json:"id"`
	CgroupID  uint64 `json:"cgroup_id"`
	Kernel    bool   `json:"kernel"`
	Name      string `json:"name"`
	Container string `json:"container"`
	Pod       string `json:"pod"`
	Namespace string `json:"namespace"`
}

// label names a preemptor as the table would.
func (c preemptionsCgroup) label() string {
	switch {
	case c.Kernel:
		return "kernel"
	case c.Container != "":
		return c.Namespace + "/" + c.Pod + "/" + c.Container
	case c.Pod != "":
		return c.Namespace + "/" + c.Pod
	case c.ID != "":
		return c.ID
	}
	return "cgroup " + strconv.FormatUint(c.CgroupID, 10)
}

// preemptors asks the daemon behind the metrics URL u for its busiest
// pairs and returns each victim cgroup's main preemptor by path. A daemon
// without --collect.preemption answers 404: none then, and no error.
func preemptors(ctx context.Context, client *http.Client, u *url.URL) map[string]Preemptor {
	api := *u
	api.Path, api.RawPath, api.RawQuery = preemptionsPath, "", ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api.String(), nil)
	if err != nil {
		return nil
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	var p preemptionsJSON
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&p); err != nil {
		return nil
	}
	out := map[string]Preemptor{}
	for _, pr := range p.Top {
		if pr.Victim.ID == "" {
			continue
		}
		if cur, ok := out[pr.Victim.ID]; !ok || pr.PerSecond > cur.PerSecond {
			out[pr.Victim.ID] = Preemptor{Label: pr.Preemptor.label(), PerSecond: pr.PerSecond}
		}
	}
	return out
}

// p99Cell formats the row's p99 wait: "-" without one.
func p99Cell(r Row) string {
	v, ok := r.P99Wait()
	if !ok || !r.Known {
		return "-"
	}
	switch {
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64) + "s"
	case v >= 1e-3:
		return strconv.FormatFloat(v*1e3, 'f', 1, 64) + "ms"
	}
	return strconv.FormatFloat(v*1e6, 'f', 0, 64) + "us"
}

// preemptorCell formats the row's main preemptor, its end kept when it is
// too long: "-" without one.
func preemptorCell(r Row) string {
	if r.MainPreemptor.Label == "" {
		return "-"
	}
	return ellipsis(Printable(r.MainPreemptor.Label), preemptorWidth)
}

// preemptorWidth is the width of the main preemptor's column.
const preemptorWidth = 24

// latencyColumns are shown when any row has a histogram or a preemptor:
// the daemon runs with --collect.latency or --collect.preemption.
var latencyColumns = []column{
	{"P99WAIT", 8, noSort, p99Cell, 6},
	{"PREEMPTOR", preemptorWidth, noSort, preemptorCell, 7},
}

// hasLatency reports whether any row has a histogram or a preemptor.
func hasLatency(rows []Row) bool {
	for _, r := range rows {
		if r.WaitHist != nil || r.MainPreemptor.Label != "" {
			return true
		}
	}
	return false
}
