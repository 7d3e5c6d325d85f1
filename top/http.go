package top

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/config"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The daemon's metric names this package reads.
const (
	runMetric       = "container_cpu_schedstat_run_seconds_total"
	waitMetric      = "container_cpu_schedstat_runqueue_seconds_total"
	periodsMetric   = "container_cpu_schedstat_run_periods_total"
	tasksMetric     = "container_schedstat_tasks"
	throttledMetric = "container_cpu_schedstat_cfs_throttled_seconds_total"
	pressureMetric  = "container_cpu_schedstat_pressure_some_seconds_total"
	passesMetric    = "schedstatd_collections_total"
	lastPassMetric  = "schedstatd_last_collection_timestamp_seconds"
)

// maxBody bounds what is read of one answer: a node with a hundred
// thousand cgroups stays well below it.
const maxBody = 256 << 20

// acceptText asks for the text exposition format.
const acceptText = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// HTTPSource reads a daemon's metrics over HTTP or HTTPS.
type HTTPSource struct {
	// URL is the daemon's metrics URL.
	URL *url.URL
	// Client does the requests; its timeout bounds each sample.
	Client *http.Client
}

// ParseURL returns the metrics URL s names. A missing scheme means http,
// a missing path /metrics.
func ParseURL(s string) (*url.URL, error) {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("--from %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("--from %q: the scheme must be http or https", s)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("--from %q: no host", s)
	}
	if u.Path == "" {
		u.Path = "/metrics"
	}
	return u, nil
}

// NewHTTPClient returns a client for the daemon configured by file, in
// the HTTP client format of Prometheus's scrape configs and promtool's
// --http.config.file (basic_auth, tls_config with ca_file, cert_file,
// key_file, ...); relative paths are relative to the file. An empty file
// name gives a plain client. Each request may take up to timeout.
func NewHTTPClient(file string, timeout time.Duration) (*http.Client, error) {
	cfg := config.DefaultHTTPClientConfig
	if file != "" {
		c, _, err := config.LoadHTTPConfigFile(file)
		if err != nil {
			return nil, fmt.Errorf("--http.config.file %s: %w", file, err)
		}
		cfg = *c
	}
	client, err := config.NewClientFromConfig(cfg, "schedstatd-top", config.WithUserAgent("schedstatd-top"))
	if err != nil {
		return nil, fmt.Errorf("--http.config.file %s: %w", file, err)
	}
	client.Timeout = timeout
	return client, nil
}

// Sample implements Source.
func (h *HTTPSource) Sample(ctx context.Context) (*Sample, error) {
	where := h.URL.Redacted()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", acceptText)
	if t := h.Client.Timeout; t > 0 {
		// The daemon then waits at most about half of it for a fresh
		// pass and otherwise answers with its latest totals, stamped
		// with their own time, instead of running out the clock.
		req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat((t/2).Seconds(), 'f', -1, 64))
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, unreachable(where, err)
	}
	defer resp.Body.Close()
	if err := checkStatus(where, resp); err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/html" {
		return nil, fmt.Errorf("%w: %s serves an HTML page; give the daemon's metrics URL, such as http://localhost:10271/metrics", ErrNotMetrics, where)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("%w: %s does not answer in the Prometheus text format: %v", ErrNotMetrics, where, err)
	}
	s, err := fromFamilies(where, mfs, time.Now())
	if err == nil && enabled(mfs[preemptionEnabledMetric]) {
		s.Preemptors = preemptors(ctx, h.Client, h.URL)
	}
	return s, err
}

// enabled reports whether a family is one gauge of value 1.
func enabled(mf *dto.MetricFamily) bool {
	return mf != nil && len(mf.GetMetric()) == 1 && value(mf.GetMetric()[0]) == 1
}

// Close implements Source.
func (h *HTTPSource) Close() error {
	h.Client.CloseIdleConnections()
	return nil
}

// unreachable explains a failed request.
func unreachable(where string, err error) error {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
	)
	if errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify) {
		return fmt.Errorf("%w at %s: the daemon's TLS certificate is not trusted: %v; name its CA in tls_config.ca_file of --http.config.file", ErrUnreachable, where, err)
	}
	return fmt.Errorf("%w at %s: %v; is schedstatd running there? --from takes its metrics URL, such as http://localhost:10271/metrics", ErrUnreachable, where, err)
}

// checkStatus explains an answer other than 200.
func checkStatus(where string, resp *http.Response) error {
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	line, _ := bufio.NewReader(io.LimitReader(resp.Body, 512)).ReadString('\n')
	detail := resp.Status
	if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "<") {
		detail += ": " + line
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%w: %s answered %s; give the user and password of the daemon's web config in basic_auth of --http.config.file", ErrUnauthorized, where, detail)
	case http.StatusNotFound:
		return fmt.Errorf("%w: %s answered %s; the daemon serves its metrics at /metrics unless --web.telemetry-path says otherwise", ErrNotMetrics, where, detail)
	}
	return fmt.Errorf("%s answered %s", where, detail)
}

// fromFamilies makes a Sample of parsed metric families. The time is the
// daemon's last pass, whose counters a scrape shows, or at when it has
// none.
func fromFamilies(where string, mfs map[string]*dto.MetricFamily, at time.Time) (*Sample, error) {
	if mfs[runMetric] == nil && mfs[waitMetric] == nil {
		if mf := mfs[passesMetric]; mf != nil && len(mf.GetMetric()) == 1 && value(mf.GetMetric()[0]) == 0 {
			return nil, fmt.Errorf("%w: the daemon at %s has not finished its first pass yet", ErrNotReady, where)
		}
		if mfs[passesMetric] != nil {
			return nil, fmt.Errorf("%w: the daemon at %s exports no cgroup: its passes read none (see its log and schedstatd_collection_errors_total)", ErrNoCgroups, where)
		}
		return nil, fmt.Errorf("%w: %s serves metrics, but no %s: it is not a schedstatd daemon", ErrNotMetrics, where, waitMetric)
	}
	if mf := mfs[lastPassMetric]; mf != nil && len(mf.GetMetric()) == 1 {
		if v := mf.GetMetric()[0].GetGauge().GetValue(); v > 0 {
			at = time.Unix(0, int64(v*1e9))
		}
	}
	s := &Sample{Time: at, Series: map[string]Series{}}
	for _, name := range []string{runMetric, waitMetric, periodsMetric, tasksMetric, throttledMetric, pressureMetric, latencyMetric} {
		mf := mfs[name]
		for _, m := range mf.GetMetric() {
			var ls Series
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "id":
					ls.ID = lp.GetValue()
				case "name":
					ls.Name = lp.GetValue()
				case "container":
					ls.Container = lp.GetValue()
				case "pod":
					ls.Pod = lp.GetValue()
				case "namespace":
					ls.Namespace = lp.GetValue()
				}
			}
			if ls.ID == "" {
				continue
			}
			se, ok := s.Series[ls.ID]
			if !ok {
				se = ls
			}
			v := value(m)
			switch name {
			case runMetric:
				se.RunSeconds = v
			case waitMetric:
				se.WaitSeconds = v
			case periodsMetric:
				se.Timeslices = v
			case tasksMetric:
				se.Tasks = v
			case throttledMetric:
				se.ThrottledSeconds, se.HasThrottled = v, true
			case pressureMetric:
				se.PressureSeconds, se.HasPressure = v, true
			case latencyMetric:
				se.WaitBuckets = latencyBuckets(m)
			}
			s.Series[ls.ID] = se
		}
	}
	if len(s.Series) == 0 {
		return nil, fmt.Errorf("%w: the daemon at %s exports no cgroup series", ErrNoCgroups, where)
	}
	return s, nil
}

// value returns a counter's, gauge's or untyped metric's value.
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return m.GetUntyped().GetValue()
}
