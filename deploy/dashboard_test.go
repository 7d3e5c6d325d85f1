package deploy

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/collector"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/cri"
	"github.com/schedstatd/schedstatd/exitcapture"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/internal/testkit/testrun"
	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/schedlat"
	"github.com/schedstatd/schedstatd/taskiter"
)

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

func loadDashboard(t *testing.T) *dashboard {
	t.Helper()
	data, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	return &d
}

// dashboardJob is the default of the dashboard's job variable.
func dashboardJob(t *testing.T) string {
	t.Helper()
	for _, v := range loadDashboard(t).Templating.List {
		if v.Name == "job" {
			var q string
			if err := json.Unmarshal(v.Query, &q); err != nil {
				t.Fatalf("job variable: %v", err)
			}
			return q
		}
	}
	t.Fatal("the dashboard has no job variable")
	return ""
}

// queries returns every PromQL expression of the dashboard by where it is:
// panel targets and the queries of template variables.
func (d *dashboard) queries(t *testing.T) map[string]string {
	t.Helper()
	q := map[string]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for i, tg := range p.Targets {
				q[p.Title+"#"+string(rune('A'+i))] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var obj struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &obj); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		// label_values(<selector>, label) queries the selector.
		sel, ok := strings.CutPrefix(obj.Query, "label_values(")
		if !ok {
			t.Fatalf("variable %s: %q is not label_values", v.Name, obj.Query)
		}
		q["variable "+v.Name] = sel[:strings.LastIndexByte(sel, ',')]
	}
	return q
}

var (
	// Parts of an expression that hold no metric names: strings, label
	// matchers, ranges and the label lists of by, without, on, ignoring
	// and group_left/right.
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true,
		"group_right": true, "bool": true, "and": true, "or": true, "unless": true, "offset": true, "atan2": true, "inf": true, "nan": true}
)

// metricNames returns the metric names expr selects. Functions and
// aggregations are identifiers followed by "(", so they are left out.
func metricNames(expr string) []string {
	s := promString.ReplaceAllString(expr, `""`)
	s = promMatchers.ReplaceAllString(s, " ")
	s = promRange.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	var names []string
	for _, loc := range promIdent.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if promKeywords[strings.ToLower(name)] || strings.HasPrefix(rest, "(") {
			continue
		}
		if loc[0] > 0 && (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.') {
			continue // the exponent or suffix of a number, as in 1e3
		}
		names = append(names, name)
	}
	return names
}

// TestMetricNames is the control for metricNames.
func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`topk(10, sum by (namespace, pod) (rate(a_total{job="$job", pod=~"x|y"}[$__rate_interval])))`, []string{"a_total"}},
		{`sum by (n) (rate(a{id="/"}[5m])) / on (n) group_left (m) sum without (le) (b) > 0.01`, []string{"a", "b"}},
		{`histogram_quantile(0.99, sum by (le) (rate(h_bucket[1m])))`, []string{"h_bucket"}},
		{`a unless b and bool c or 1e3`, []string{"a", "b", "c"}},
		{`up{job="a{b}"} offset 5m`, []string{"up"}},
		{`container_cpu_schedstat_run_second_total{container!=""}`, []string{"container_cpu_schedstat_run_second_total"}},
	}
	for _, tt := range tests {
		if got := metricNames(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("metricNames(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}

// registryNames returns the names of every series a registry like the
// daemon's exposes: the exporter of a poller over a synthetic tree, its
// pass-duration histogram, the runtime client's, the task iterator's and
// exit capture's metrics (both unloaded), the procfs source's, and the Go and process
// collectors. Histograms and summaries give their _bucket, _sum
// and _count names.
func registryNames(t *testing.T) map[string]bool {
	t.Helper()
	tree := synth.NewTree("/", "/kubepods.slice")
	tree.Cgroups[0].HasUsage = true
	tree.Cgroups[1].HasUsage = true
	tree.Cgroups[1].Bandwidth = cgroupfs.Bandwidth{HasThrottling: true, HasBursts: true}
	tree.Cgroups[1].Pressure = cgroupfs.Pressure{HasSome: true, HasFull: true}
	k := synth.NewKernel()
	k.Spawn(1)
	tree.Set("/kubepods.slice", 1)
	logger := slog.New(slog.DiscardHandler)
	p := collector.NewPoller(container.NewTable(tree, k), time.Hour, logger)
	testrun.Background(t, p.Run)
	if _, err := p.Fresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	rt, err := cri.New(cri.Config{Endpoint: "unix:///nonexistent/cri.sock", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	reg := prometheus.NewRegistry()
	lat := schedlat.NewRollup(schedCounts{tree.ID("/kubepods.slice"): {Waits: 1, WaitNanoseconds: 5000, Buckets: [schedlat.Buckets]uint64{10: 1}}})
	reg.MustRegister(collector.NewExporter(p, collector.WithLabeler(rt), collector.WithSchedLatency(lat)), p.Duration(), rt,
		taskiter.NewCollector(nil), exitcapture.NewCollector(nil, nil, func() uint64 { return 0 }),
		schedlat.NewCollector(lat, false),
		procsource.NewCollector(&procsource.FDBudget{Max: 100}),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		addFamily(names, mf.GetName(), mf.GetType())
	}
	return names
}

// schedCounts are the fixed counts of a sched_switch program with both
// features on, by cgroup id.
type schedCounts map[uint64]schedlat.Counts

func (s schedCounts) Read() (map[uint64]schedlat.Counts, error) { return s, nil }
func (s schedCounts) Forget([]uint64)                           {}
func (s schedCounts) Latency() bool                             { return true }
func (s schedCounts) Preemption() bool                          { return true }
func (s schedCounts) Since() time.Time                          { return time.Unix(0, 0) }

// addFamily adds the series names of a family of type typ.
func addFamily(names map[string]bool, name string, typ dto.MetricType) {
	names[name] = true
	switch typ {
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
	case dto.MetricType_SUMMARY:
		names[name+"_sum"], names[name+"_count"] = true, true
	}
}

// checkQueries fails for every metric a query (by where it is) names that
// names lacks.
func checkQueries(t *testing.T, queries map[string]string, names map[string]bool, source string) {
	t.Helper()
	for where, expr := range queries {
		found := metricNames(expr)
		if len(found) == 0 {
			t.Errorf("%s: no metric in %q", where, expr)
		}
		for _, n := range found {
			if !names[n] {
				t.Errorf("%s: %s is not exported (%s)", where, n, source)
			}
		}
	}
}

// TestDashboardQueriesExportedMetrics checks every query of the dashboard
// against the names a registry like the daemon's gathers. The daemon's own
// /metrics is checked too, as root, in TestDaemonSetArgsServe.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q", d.UID, d.Title)
	}
	names := registryNames(t)
	for _, n := range []string{"container_cpu_schedstat_runqueue_seconds_total", "container_cpu_schedstat_usage_seconds_total", "schedstatd_runtime_up", "schedstatd_collection_duration_seconds_bucket"} {
		if !names[n] {
			t.Fatalf("the registry lacks %s; the test would prove nothing", n)
		}
	}
	checkQueries(t, d.queries(t), names, "in-process registry")

	// The panels the dashboard is for: wait, run, coverage, per pod.
	all := strings.Join(slices.Collect(maps.Values(d.queries(t))), "\n")
	for _, want := range []string{
		"container_cpu_schedstat_runqueue_seconds_total",
		"container_cpu_schedstat_run_seconds_total",
		"container_cpu_schedstat_usage_seconds_total",
		"container_cpu_schedstat_cfs_throttled_seconds_total",
		"by (namespace, pod)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no query uses %q", want)
		}
	}
}
