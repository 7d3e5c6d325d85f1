package top

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

// latencyExposition is exposition with a latency histogram and the
// preemption gauge of a daemon run with --collect.latency and
// --collect.preemption; n waits in all, tail of them above 4 ms, and the
// last pass at stamp.
func latencyExposition(n, tail int, stamp float64) string {
	lbl := `container="nginx",id="/kubepods/pod1/abc",image="nginx:1",name="abc",namespace="shop",pod="web-0"`
	s := strings.Replace(exposition, "schedstatd_last_collection_timestamp_seconds 1.7e+09", fmt.Sprintf("schedstatd_last_collection_timestamp_seconds %v", stamp), 1)
	s += "# TYPE container_cpu_schedstat_runqueue_latency_seconds histogram\n"
	for _, b := range []struct {
		le string
		n  int
	}{{"0.0001", n - tail}, {"0.004", n - tail}, {"0.008", n}, {"+Inf", n}} {
		s += fmt.Sprintf("container_cpu_schedstat_runqueue_latency_seconds_bucket{%s,le=%q} %d\n", lbl, b.le, b.n)
	}
	s += fmt.Sprintf("container_cpu_schedstat_runqueue_latency_seconds_sum{%s} 1\n", lbl)
	s += fmt.Sprintf("container_cpu_schedstat_runqueue_latency_seconds_count{%s} %d\n", lbl, n)
	s += "# TYPE schedstatd_preemption_tracking_enabled gauge\nschedstatd_preemption_tracking_enabled 1\n"
	return s
}

// TestLatencyColumns reads two samples of a daemon with the latency
// histogram and the preemption pairs: the container's row gets the p99
// of the waits between them and its main preemptor, and the table shows
// both columns.
func TestLatencyColumns(t *testing.T) {
	calls := 0
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			calls++
			// 1000 waits between the samples, 20 of them in (4, 8] ms.
			fmt.Fprint(w, latencyExposition(1000*calls, 20*calls, 1.7e9+float64(calls)))
		case "/api/v1/preemptions":
			fmt.Fprint(w, `{"top":[
				{"victim":{"id":"/kubepods/pod1/abc"},"preemptor":{"id":"/kubepods/pod2/def","namespace":"batch","pod":"crunch","container":"spin"},"per_second":120},
				{"victim":{"id":"/kubepods/pod1/abc"},"preemptor":{"kernel":true},"per_second":3},
				{"victim":{"id":"/"},"preemptor":{"kernel":true},"per_second":50}]}`)
		default:
			http.NotFound(w, r)
		}
	})
	src := source(t, s.URL+"/metrics", nil)
	ctx := context.Background()
	a, err := src.Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := src.Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Rates(a, b)
	if err != nil {
		t.Fatal(err)
	}
	rows = Group(rows, ViewContainers)
	if len(rows) != 1 {
		t.Fatalf("rows %+v", rows)
	}
	r := rows[0]
	// Rank 990 of 1000 falls in (4, 8] ms, 10 of its 20 waits in: 6 ms.
	if p, ok := r.P99Wait(); !ok || math.Abs(p-0.006) > 1e-9 {
		t.Errorf("p99 %v (%v), want 6ms", p, ok)
	}
	if r.MainPreemptor.Label != "batch/crunch/spin" || r.MainPreemptor.PerSecond != 120 {
		t.Errorf("main preemptor %+v", r.MainPreemptor)
	}
	sc := &Screen{View: ViewContainers, Rows: rows, Interval: time.Second}
	lines := sc.Table(0)
	if !strings.Contains(lines[0], "P99WAIT") || !strings.Contains(lines[0], "PREEMPTOR") {
		t.Errorf("header %q", lines[0])
	}
	if !strings.Contains(lines[1], "6.0ms") || !strings.Contains(lines[1], "batch/crunch/spin") {
		t.Errorf("row %q", lines[1])
	}
	// Without the histogram and the pairs the columns stay away.
	plain := &Screen{View: ViewContainers, Rows: []Row{{Label: "x", IDs: []string{"/x"}, Known: true}}}
	if h := plain.Table(0)[0]; strings.Contains(h, "P99WAIT") {
		t.Errorf("header without latency data: %q", h)
	}
}

// TestQuantile checks the interpolation against histogram_quantile's.
func TestQuantile(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		bs   []Bucket
		q    float64
		want float64
		ok   bool
	}{
		{nil, 0.99, 0, false},
		{[]Bucket{{1, 0}, {inf, 0}}, 0.99, 0, false},
		{[]Bucket{{1, 50}, {2, 100}, {inf, 100}}, 0.5, 1, true},
		{[]Bucket{{1, 50}, {2, 100}, {inf, 100}}, 0.75, 1.5, true},
		{[]Bucket{{1, 50}, {2, 90}, {inf, 100}}, 0.99, 2, true}, // in +Inf: the highest finite bound
	} {
		got, ok := quantile(tc.q, tc.bs)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("quantile(%v, %v) = %v, %v; want %v, %v", tc.q, tc.bs, got, ok, tc.want, tc.ok)
		}
	}
}
