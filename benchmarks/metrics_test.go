package benchmarks_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/schedstatd/schedstatd/collector"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/internal/testkit/testrun"
	"github.com/schedstatd/schedstatd/schedstat"
)

// BenchmarkMetrics renders /metrics for a table of 1,000 and 5,000
// cgroups shaped as a Kubernetes node with the systemd cgroup driver,
// after its pass, three ways in the same run: the daemon's handler, which
// writes the container series straight into the response through label
// sets built once per cgroup, in the text format and in OpenMetrics (what
// Prometheus asks for); and, as the baseline, the exporter gathered as a
// collector through a client_golang registry and encoded by expfmt, as
// the daemon did before (and still does for a protobuf scrape). The
// OpenMetrics render is also timed gzipped, as Prometheus asks for it
// (exposition-bytes are then the compressed bytes). One op is one render;
// B/op is what a scrape allocates. It reports ns/series and
// the size of the exposition. -short renders 1,000 cgroups only.
func BenchmarkMetrics(b *testing.B) {
	sizes := []int{1000, 5000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, cgroups := range sizes {
		b.Run(fmt.Sprintf("cgroups=%d", cgroups), func(b *testing.B) {
			tree, k := kubeTree(cgroups)
			p := collector.NewPoller(container.NewTable(tree, k), time.Hour, slog.New(slog.DiscardHandler))
			testrun.Background(b, p.Run)
			s, err := p.Fresh(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if len(s.Cgroups) != cgroups {
				b.Fatalf("snapshot of %d cgroups, want %d", len(s.Cgroups), cgroups)
			}
			for _, accept := range []struct{ name, header, encoding string }{
				{"direct-text", "text/plain;version=0.0.4", ""},
				{"direct-openmetrics", "application/openmetrics-text;version=1.0.0", ""},
				// As Prometheus scrapes: OpenMetrics, gzipped.
				{"direct-openmetrics-gzip", "application/openmetrics-text;version=1.0.0", "gzip"},
			} {
				b.Run(accept.name, func(b *testing.B) {
					h := collector.NewExporter(p).Handler(prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
					req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
					req.Header.Set("Accept", accept.header)
					req.Header.Set("Accept-Encoding", accept.encoding)
					w := &countingWriter{header: http.Header{}}
					h.ServeHTTP(w, req) // warm: the label sets are built once
					b.ReportAllocs()
					for b.Loop() {
						w.n, w.lines = 0, 0
						h.ServeHTTP(w, req)
					}
					if accept.encoding != "" {
						// Lines of compressed bytes mean nothing.
						b.ReportMetric(float64(w.n), "exposition-bytes")
						return
					}
					reportRender(b, w.n, w.lines)
				})
			}
			b.Run("client_golang", func(b *testing.B) {
				reg := prometheus.NewRegistry()
				reg.MustRegister(collector.NewExporter(p))
				format := expfmt.NewFormat(expfmt.TypeTextPlain)
				var buf bytes.Buffer
				b.ReportAllocs()
				for b.Loop() {
					buf.Reset()
					mfs, err := reg.Gather()
					if err != nil {
						b.Fatal(err)
					}
					enc := expfmt.NewEncoder(&buf, format)
					for _, mf := range mfs {
						if err := enc.Encode(mf); err != nil {
							b.Fatal(err)
						}
					}
				}
				reportRender(b, buf.Len(), bytes.Count(buf.Bytes(), []byte("\n")))
			})
		})
	}
}

// reportRender reports the exposition's size, its lines (series, and the
// HELP and TYPE lines for the direct render) and the time per line.
func reportRender(b *testing.B, size, series int) {
	b.ReportMetric(float64(size), "exposition-bytes")
	b.ReportMetric(float64(series), "lines")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(series), "ns/line")
}

// countingWriter is a ResponseWriter that counts the bytes and lines it
// is given and keeps none.
type countingWriter struct {
	header   http.Header
	n, lines int
}

func (w *countingWriter) Header() http.Header { return w.header }
func (w *countingWriter) WriteHeader(int)     {}
func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	w.lines += bytes.Count(p, []byte("\n"))
	return len(p), nil
}

// kubeTree returns a synthetic tree of n cgroups under kubepods.slice,
// pods of three containers each, one task per container, and the kernel
// holding those tasks.
func kubeTree(n int) (*synth.Tree, *synth.Kernel) {
	const (
		kube = "/kubepods.slice"
		qos  = kube + "/kubepods-burstable.slice"
	)
	tree := synth.NewTree("/", kube, qos)
	k := synth.NewKernel()
	tid := int32(0)
	for pod := 0; len(tree.Cgroups) < n; pod++ {
		uid := fmt.Sprintf("%08x_%04x_%04x_%04x_%012x", pod, pod, pod, pod, pod)
		podDir := qos + "/kubepods-burstable-pod" + uid + ".slice"
		tree.Mkdir(podDir)
		for c := 0; c < 3 && len(tree.Cgroups) < n; c++ {
			ctr := podDir + fmt.Sprintf("/cri-containerd-%064x.scope", pod*3+c)
			tree.Mkdir(ctr)
			tid++
			k.Spawn(tid).Stat = schedstat.Stat{RunNanoseconds: uint64(tid) * 1e9, WaitNanoseconds: uint64(tid) * 1e7, Timeslices: uint64(tid) * 100}
			tree.Set(ctr, tid)
		}
	}
	return tree, k
}
