package collector

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/schedstatd/schedstatd/schedlat"
)

// otherRegistry stands for the daemon's other collectors.
func otherRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "schedstatd_other_total", Help: "Another collector's counter."})
	c.Add(3)
	reg.MustRegister(c)
	return reg
}

// scrapeBody gets / from h with the request headers hdr and returns the
// response and its body, gunzipped when it came gzipped.
func scrapeBody(t *testing.T, h http.Handler, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	body := rec.Body.Bytes()
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	return resp, body
}

// gathered returns what client_golang makes of the exporter and others
// together: the families the direct render must equal.
func gathered(t *testing.T, e *Exporter, others prometheus.Gatherer) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	mfs, err := prometheus.Gatherers{reg, others}.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// canonical writes families in the text format, families by name and
// samples by their label sets, so that two renders compare as text.
func canonical(t *testing.T, mfs []*dto.MetricFamily) string {
	t.Helper()
	slices.SortFunc(mfs, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	var buf bytes.Buffer
	for _, mf := range mfs {
		slices.SortFunc(mf.Metric, func(a, b *dto.Metric) int { return strings.Compare(a.String(), b.String()) })
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

// TestHandlerTextEqualsClientGolang scrapes the handler in the text format,
// plain and gzipped, and parses it: the same families, samples and values
// as client_golang gathers from the exporter as a collector, the
// container series with the runtime's labels included.
func TestHandlerTextEqualsClientGolang(t *testing.T) {
	e, _ := fixtureExporter(t)
	e.labeler = podLabeler{}
	others := otherRegistry()
	h := e.Handler(others, quietLogger())
	want := canonical(t, gathered(t, e, others))
	for _, enc := range []string{"", "gzip"} {
		resp, body := scrapeBody(t, h, map[string]string{"Accept": "text/plain;version=0.0.4", "Accept-Encoding": enc})
		if got := resp.Header.Get("Content-Encoding"); got != enc {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q", enc, got)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("Content-Type %q", ct)
		}
		parser := expfmt.NewTextParser(model.LegacyValidation)
		parsed, err := parser.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("parse: %v\n%s", err, body)
		}
		var mfs []*dto.MetricFamily
		for _, mf := range parsed {
			mfs = append(mfs, mf)
		}
		if diff := cmp.Diff(want, canonical(t, mfs)); diff != "" {
			t.Errorf("Accept-Encoding %q: direct render (-client_golang +direct):\n%s", enc, diff)
		}
	}
}

// TestHandlerOpenMetricsEqualsClientGolang compares the OpenMetrics render
// line by line with expfmt's encoding of the gathered families: the same
// lines, one # EOF, at the end.
func TestHandlerOpenMetricsEqualsClientGolang(t *testing.T) {
	e, _ := fixtureExporter(t)
	e.labeler = podLabeler{}
	others := otherRegistry()
	resp, body := scrapeBody(t, e.Handler(others, quietLogger()), map[string]string{"Accept": "application/openmetrics-text;version=1.0.0"})
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("Content-Type %q", ct)
	}
	var buf bytes.Buffer
	for _, mf := range gathered(t, e, others) {
		if _, err := expfmt.MetricFamilyToOpenMetrics(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	buf.WriteString("# EOF\n")
	lines := func(b []byte) []string {
		l := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		slices.Sort(l)
		return l
	}
	if diff := cmp.Diff(lines(buf.Bytes()), lines(body)); diff != "" {
		t.Errorf("OpenMetrics lines (-expfmt +direct):\n%s", diff)
	}
	if !bytes.HasSuffix(body, []byte("\n# EOF\n")) || bytes.Count(body, []byte("# EOF")) != 1 {
		t.Errorf("OpenMetrics body does not end in one # EOF:\n%s", body[max(0, len(body)-200):])
	}
}

// TestHandlerProtobufFallsBack asks for protobuf: client_golang serves
// every family, the container series included.
func TestHandlerProtobufFallsBack(t *testing.T) {
	e, _ := fixtureExporter(t)
	others := otherRegistry()
	resp, body := scrapeBody(t, e.Handler(others, quietLogger()), map[string]string{"Accept": "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"})
	format := expfmt.ResponseFormat(resp.Header)
	if format.FormatType() != expfmt.TypeProtoDelim {
		t.Fatalf("format %q, want delimited protobuf", format)
	}
	dec := expfmt.NewDecoder(bytes.NewReader(body), format)
	var mfs []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		mfs = append(mfs, mf)
	}
	if diff := cmp.Diff(canonical(t, gathered(t, e, others)), canonical(t, mfs)); diff != "" {
		t.Errorf("protobuf (-client_golang +served):\n%s", diff)
	}
}

// TestSelectionDropsSeriesNotTime excludes the /system.slice subtree and
// everything deeper than 2: their series go, the root's and
// /kubepods.slice's values stay what they were with every cgroup served
// (they include the excluded cgroups' time), and schedstatd_cgroups_selected
// counts what is left.
func TestSelectionDropsSeriesNotTime(t *testing.T) {
	e, _ := fixtureExporter(t)
	all := seriesByID(t, e)
	sel, err := CompileSelection(nil, []string{`/system\.slice(/.*)?`}, 2)
	if err != nil {
		t.Fatal(err)
	}
	e = NewExporter(e.poller, WithSelection(sel))
	got := seriesByID(t, e)
	var ids []string
	for id := range got {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	want := []string{"/", "/kubepods.slice", "/kubepods.slice/kubepods-burstable.slice", "/user.slice", "/user.slice/bad\\xffutf8\\xc3", "/user.slice/tab\there\r\x1b[31mred\\\\x2d"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("cgroups served (-want +got):\n%s", diff)
	}
	for _, id := range []string{"/", "/kubepods.slice"} {
		if got[id] != all[id] || got[id] == 0 {
			t.Errorf("%s: run seconds %v with the selection, %v without: want the same, and not 0", id, got[id], all[id])
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "schedstatd_cgroups_selected" {
			if v := mf.GetMetric()[0].GetGauge().GetValue(); int(v) != len(want) {
				t.Errorf("schedstatd_cgroups_selected %v, want %d", v, len(want))
			}
			return
		}
	}
	t.Error("no schedstatd_cgroups_selected")
}

// seriesByID returns the run seconds of each cgroup the exporter serves,
// by id label.
func seriesByID(t *testing.T, e *Exporter) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "container_cpu_schedstat_run_seconds_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "id" {
					out[lp.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

func TestSelected(t *testing.T) {
	sel, err := CompileSelection([]string{"/kubepods.*", "/"}, []string{`/kubepods\.slice/kubepods-besteffort\.slice(/.*)?`}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		"/":                     true,
		"/kubepods.slice":       true,
		"/kubepods.slice/a":     true,
		"/kubepods.slice/a/b":   true,
		"/kubepods.slice/a/bc":  true,
		"/kubepods.slice/a/b/c": false, // depth 4
		"/kubepods.slice/kubepods-besteffort.slice":   false,
		"/kubepods.slice/kubepods-besteffort.slice/x": false,
		"/system.slice":     false, // not included
		"/x/kubepods.slice": false, // anchored
	} {
		if got := sel.Selected(path); got != want {
			t.Errorf("Selected(%q) = %v, want %v", path, got, want)
		}
	}
	if _, err := CompileSelection([]string{"("}, nil, -1); err == nil {
		t.Error("a pattern that does not compile: no error")
	}
	var none *Selection
	if !none.Selected("/a/b/c/d/e") {
		t.Error("a nil selection must select everything")
	}
	for path, want := range map[string]int{"/": 0, "/a": 1, "/a/b": 2, "/a/b/c": 3} {
		if got := Depth(path); got != want {
			t.Errorf("Depth(%q) = %d, want %d", path, got, want)
		}
	}
}

// TestRenderAllocatesNothing renders the container series of a warm
// label cache: no allocation, whatever the number of series, and the
// cache holds the cgroups of the latest snapshot only.
func TestRenderAllocatesNothing(t *testing.T) {
	e, _ := fixtureExporter(t)
	s := e.poller.Last()
	ls := e.labels.resolve(s, podLabeler{}, nil)
	w := bufio.NewWriterSize(io.Discard, renderBufferSize)
	for _, om := range []bool{false, true} {
		allocs := testing.AllocsPerRun(20, func() {
			if err := writeContainerSeries(w, s, ls, om); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("openmetrics %v: %v allocations per render, want 0", om, allocs)
		}
	}
	if n := len(e.labels.byPath); n != len(s.Cgroups) {
		t.Errorf("label cache holds %d cgroups, the snapshot %d", n, len(s.Cgroups))
	}
	fewer := *s
	fewer.Cgroups = s.Cgroups[:3]
	e.labels.resolve(&fewer, nil, nil)
	if n := len(e.labels.byPath); n != 3 {
		t.Errorf("after a snapshot of 3 cgroups the label cache holds %d", n)
	}
}

// TestSelectionExamples checks the patterns the README gives on the paths
// kubelet makes with the systemd and cgroupfs drivers.
func TestSelectionExamples(t *testing.T) {
	const (
		pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice"
		ctr = pod + "/cri-containerd-" + ctrID + ".scope"
		fs  = "/kubepods/burstable/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901/" + ctrID
	)
	for _, tc := range []struct {
		include, exclude []string
		depth            int
		want             map[string]bool
	}{
		{[]string{"/kubepods.*"}, nil, -1, map[string]bool{"/": false, pod: true, ctr: true, fs: true, "/system.slice": false}},
		{nil, []string{`/(system|user)\.slice(/.*)?`}, -1, map[string]bool{"/": true, pod: true, "/system.slice": false, "/system.slice/kubelet.service": false, "/user.slice/user-0.slice": false, "/system.slicex": true}},
		{nil, []string{`.*/[a-z-]*-?[0-9a-f]{64}(\.scope)?`}, -1, map[string]bool{pod: true, ctr: false, fs: false, "/kubepods/burstable/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901": true}},
		{nil, nil, 2, map[string]bool{"/kubepods.slice/kubepods-burstable.slice": true, pod: false, "/kubepods.slice/kubepods-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice": true}},
	} {
		sel, err := CompileSelection(tc.include, tc.exclude, tc.depth)
		if err != nil {
			t.Fatal(err)
		}
		for path, want := range tc.want {
			if got := sel.Selected(path); got != want {
				t.Errorf("include %q exclude %q depth %d: Selected(%q) = %v, want %v", tc.include, tc.exclude, tc.depth, path, got, want)
			}
		}
	}
}

// TestHandlerServesSchedLatency turns the latency and preemption series on
// (as TestSchedLatencySeries does) and scrapes the handler in the text
// format: they are served beside the directly written series, the same as
// client_golang gathers them, and left out for the cgroups a selection
// drops.
func TestHandlerServesSchedLatency(t *testing.T) {
	e, _ := fixtureExporter(t)
	ids := map[string]uint64{}
	for _, c := range e.poller.Last().Cgroups {
		ids[c.Path] = c.ID
	}
	var c schedlat.Counts
	c.Buckets[21] = 4
	c.Waits, c.WaitNanoseconds = 4, 4_000_000
	c.Same, c.Other, c.Kernel, c.Caused = 1, 5, 2, 7
	ctr := podSlice + "/cri-containerd-" + ctrID + ".scope"
	sel, err := CompileSelection(nil, []string{`/kubepods\.slice`}, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Selection{nil, sel} {
		e := NewExporter(e.poller, WithSelection(s), WithSchedLatency(schedlat.NewRollup(fixedCounts{ids[ctr]: c})))
		others := otherRegistry()
		want := canonical(t, gathered(t, e, others))
		if !strings.Contains(want, "container_cpu_schedstat_runqueue_latency_seconds_bucket") || strings.Contains(want, `preemptions_caused_total{container="",id="/kubepods.slice",`) != (s == nil) {
			t.Fatalf("selection %v: client_golang's families lack the latency series, or the selection:\n%s", s != nil, want)
		}
		_, body := scrapeBody(t, e.Handler(others, quietLogger()), map[string]string{"Accept": "text/plain;version=0.0.4"})
		parser := expfmt.NewTextParser(model.LegacyValidation)
		parsed, err := parser.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("parse: %v\n%s", err, body)
		}
		var mfs []*dto.MetricFamily
		for _, mf := range parsed {
			mfs = append(mfs, mf)
		}
		if diff := cmp.Diff(want, canonical(t, mfs)); diff != "" {
			t.Errorf("selection %v: direct render (-client_golang +direct):\n%s", s != nil, diff)
		}
	}
}
