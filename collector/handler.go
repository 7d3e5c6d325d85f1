package collector

import (
	"bufio"
	"compress/gzip"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
)

// renderBufferSize is the buffer between the render and the response.
const renderBufferSize = 32 << 10

var (
	bufPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, renderBufferSize) }}
	// gzip at its fastest level: it costs about half the default
	// level's CPU on an exposition, which repeats the label sets of
	// every series and shrinks well at any level.
	gzipPool = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
		return w
	}}
)

// Handler serves the exporter's metrics and those of others (the daemon's
// own: self counters of the sources, go_*, process_*). To a scraper that
// takes the text format or OpenMetrics, as Prometheus does, it writes the
// container series of the latest snapshot straight into the response
// through the cached label sets, so a scrape's allocations do not grow
// with the series; the Exporter's own counters, the runqueue latency and
// preemption series where they are on, and others are gathered and
// encoded by client_golang after them. A scraper that asks for
// protobuf gets every family through client_golang. The response is
// gzipped when the scraper accepts it. Gather errors of others are
// logged, and what was gathered is served.
func (e *Exporter) Handler(others prometheus.Gatherer, logger *slog.Logger) http.Handler {
	self := prometheus.NewRegistry()
	self.MustRegister(e.Self())
	// The latency and preemption series (histograms, opt-in) go through
	// client_golang on every path.
	latency := prometheus.NewRegistry()
	latency.MustRegister(e.Latency())
	rest := prometheus.Gatherers{self, latency, others}
	containers := prometheus.NewRegistry()
	containers.MustRegister(e.Containers())
	full := promhttp.HandlerFor(prometheus.Gatherers{containers, self, others}, promhttp.HandlerOpts{
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelError),
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		format := expfmt.NegotiateAccept(r.Header, expfmt.DefaultOpenMetricsAcceptedFormats()...)
		om := format.FormatType() == expfmt.TypeOpenMetrics
		if !om && format.FormatType() != expfmt.TypeTextPlain {
			full.ServeHTTP(w, r)
			return
		}
		mfs, err := rest.Gather()
		if err != nil {
			logger.Error("error gathering metrics", "err", err)
		}
		h := w.Header()
		h.Set("Content-Type", string(format))
		h.Add("Vary", "Accept")
		h.Add("Vary", "Accept-Encoding")
		var out io.Writer = w
		if acceptsGzip(r) {
			h.Set("Content-Encoding", "gzip")
			gz := gzipPool.Get().(*gzip.Writer)
			gz.Reset(w)
			defer func() { gz.Close(); gzipPool.Put(gz) }()
			out = gz
		}
		bw := bufPool.Get().(*bufio.Writer)
		bw.Reset(out)
		defer func() { bw.Reset(nil); bufPool.Put(bw) }()
		s := e.poller.Kept()
		if err := writeContainerSeries(bw, s, e.labels.resolve(s, e.labeler, e.selection), om); err != nil {
			return // the scraper went away
		}
		enc := expfmt.NewEncoder(bw, format)
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				logger.Error("error encoding metrics", "family", mf.GetName(), "err", err)
				return
			}
		}
		if c, ok := enc.(expfmt.Closer); ok {
			c.Close() // OpenMetrics' "# EOF"
		}
		bw.Flush()
	})
}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip
// (or any encoding), and does not refuse it with q=0.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, tok := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(tok, ";")
			if name = strings.TrimSpace(name); name != "gzip" && name != "*" {
				continue
			}
			if q, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
				if f, err := strconv.ParseFloat(q, 64); err == nil && f == 0 {
					return false
				}
			}
			return true
		}
	}
	return false
}
