package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/schedstatd/schedstatd/collector"
)

// maxPassWait bounds how long a scrape waits for its fresh pass when the
// scraper sends no timeout; after it, the scrape gets the latest totals.
const maxPassWait = 10 * time.Second

// newMux serves the landing page, the metrics, the tasks API and
// /healthz: the container series of poller's snapshots (exported with
// opts), the daemon's own metrics, and extra collectors of the sources;
// threads reads the tasks of a table that tracks none (nil if every table
// does).
func newMux(cfg *config, poller *collector.Poller, logger *slog.Logger, threads threadReader, opts []collector.Option, extra ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		poller.Duration(),
		versioncollector.NewCollector("schedstatd"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	reg.MustRegister(extra...)
	// Scrapers that ask for OpenMetrics (Accept:
	// application/openmetrics-text) get it, with created timestamps left
	// out; others get the text format, or protobuf if they ask.
	metrics := collector.NewExporter(poller, opts...).Handler(reg, logger)

	mux := http.NewServeMux()
	mux.Handle(cfg.metricsPath, readOnly(limit(cfg.maxRequests, fresh(poller, metrics, logger))))
	mux.Handle(collector.TasksPath, readOnly(limit(cfg.maxRequests, &tasksHandler{poller: poller, procfs: cfg.procfs, threads: threads, logger: logger})))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := poller.Health(time.Now()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "unhealthy: %v\n", err)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	if cfg.metricsPath != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "schedstatd",
			Description: "Per-cgroup CPU scheduler statistics: time on a CPU, time waiting on a runqueue, timeslices.",
			Version:     version.Info(),
			// No pprof handlers are served: no links to them.
			Profiling: "false",
			Links: []web.LandingLinks{
				{Address: cfg.metricsPath, Text: "Metrics"},
				{Address: "/healthz", Text: "Health"},
			},
		})
		if err != nil {
			logger.Error("landing page", "err", err)
		} else {
			mux.Handle("/", landing)
		}
	}
	return mux
}

// fresh runs a pass before next answers, so a scrape shows the totals of
// that moment. It waits at most the scraper's timeout (or maxPassWait);
// after that the scrape gets the latest totals, or 503 if no pass has
// finished yet.
func fresh(poller *collector.Poller, next http.Handler, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait := maxPassWait
		if s := r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds"); s != "" {
			if sec, err := strconv.ParseFloat(s, 64); err == nil && sec > 0 {
				wait = min(wait, time.Duration(sec*float64(time.Second)*0.9))
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		s, err := poller.Fresh(ctx)
		cancel()
		if err != nil {
			if s.Counters.Passes == 0 {
				// An empty answer would end every series; say why instead.
				http.Error(w, fmt.Sprintf("the first pass has not finished yet: %v", err), http.StatusServiceUnavailable)
				return
			}
			logger.Debug("scrape served the latest totals without a fresh pass", "err", err)
		}
		next.ServeHTTP(w, r)
	})
}

// readOnly answers 405 to every method but GET and HEAD, before next (and
// so its pass) runs.
func readOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, r.Method+" is not allowed: metrics are read with GET", http.StatusMethodNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// limit answers 503 when max scrapes are in flight already.
func limit(max int, next http.Handler) http.Handler {
	if max <= 0 {
		return next
	}
	sem := make(chan struct{}, max)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
			next.ServeHTTP(w, r)
		default:
			http.Error(w, fmt.Sprintf("too many scrapes in flight (--web.max-requests=%d)", max), http.StatusServiceUnavailable)
		}
	})
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
