package top

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// exposition is a daemon's answer, in the text format, trimmed.
const exposition = `# HELP container_cpu_schedstat_run_seconds_total Time the cgroup's tasks ran on a CPU.
# TYPE container_cpu_schedstat_run_seconds_total counter
container_cpu_schedstat_run_seconds_total{container="",id="/",image="",name="/",namespace="",pod=""} 100.5
container_cpu_schedstat_run_seconds_total{container="nginx",id="/kubepods/pod1/abc",image="nginx:1",name="abc",namespace="shop",pod="web-0"} 10.25
# TYPE container_cpu_schedstat_runqueue_seconds_total counter
container_cpu_schedstat_runqueue_seconds_total{container="",id="/",image="",name="/",namespace="",pod=""} 50
container_cpu_schedstat_runqueue_seconds_total{container="nginx",id="/kubepods/pod1/abc",image="nginx:1",name="abc",namespace="shop",pod="web-0"} 7.5
# TYPE container_cpu_schedstat_run_periods_total counter
container_cpu_schedstat_run_periods_total{container="",id="/",image="",name="/",namespace="",pod=""} 9000
container_cpu_schedstat_run_periods_total{container="nginx",id="/kubepods/pod1/abc",image="nginx:1",name="abc",namespace="shop",pod="web-0"} 300
# TYPE container_schedstat_tasks gauge
container_schedstat_tasks{container="",id="/",image="",name="/",namespace="",pod=""} 170
container_schedstat_tasks{container="nginx",id="/kubepods/pod1/abc",image="nginx:1",name="abc",namespace="shop",pod="web-0"} 4
# TYPE schedstatd_collections_total counter
schedstatd_collections_total 12
# TYPE schedstatd_last_collection_timestamp_seconds gauge
schedstatd_last_collection_timestamp_seconds 1.7e+09
`

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func source(t *testing.T, rawURL string, client *http.Client) *HTTPSource {
	t.Helper()
	u, err := ParseURL(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	if client == nil {
		client, err = NewHTTPClient("", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
	}
	return &HTTPSource{URL: u, Client: client}
}

func TestHTTPSample(t *testing.T) {
	var accept, timeout string
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		timeout = r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds")
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		fmt.Fprint(w, exposition)
	})
	// No path means /metrics.
	got, err := source(t, s.URL, nil).Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := &Sample{
		Time: time.Unix(1700000000, 0),
		Series: map[string]Series{
			"/": {ID: "/", Name: "/", RunSeconds: 100.5, WaitSeconds: 50, Timeslices: 9000, Tasks: 170},
			"/kubepods/pod1/abc": {ID: "/kubepods/pod1/abc", Name: "abc", Container: "nginx", Pod: "web-0", Namespace: "shop",
				RunSeconds: 10.25, WaitSeconds: 7.5, Timeslices: 300, Tasks: 4},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Sample (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(accept, "text/plain") {
		t.Errorf("Accept: %q, want the text format first", accept)
	}
	// Half the client's timeout: the daemon answers with its latest
	// totals rather than let the client give up.
	if timeout != "2.5" {
		t.Errorf("X-Prometheus-Scrape-Timeout-Seconds: %q, want 2.5", timeout)
	}
}

func TestHTTPSampleWithoutPassTimeUsesNow(t *testing.T) {
	body := strings.Split(exposition, "# TYPE schedstatd_last_collection_timestamp_seconds")[0]
	s := serve(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) })
	before := time.Now()
	got, err := source(t, s.URL+"/metrics", nil).Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Time.Before(before) || got.Time.After(time.Now()) {
		t.Errorf("time %s is not the time of the request", got.Time)
	}
}

func TestHTTPErrors(t *testing.T) {
	closed := serve(t, nil)
	closedURL := closed.URL
	closed.Close()
	tests := []struct {
		name    string
		handler http.HandlerFunc
		url     string
		want    error
		says    string
	}{
		{"unreachable", nil, closedURL + "/metrics", ErrUnreachable, "is schedstatd running there?"},
		{"not found", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, "", ErrNotMetrics, "404 Not Found"},
		{"landing page", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, "<html><body>schedstatd</body></html>")
		}, "", ErrNotMetrics, "serves an HTML page"},
		{"garbage", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "{\"json\": true}\n") }, "", ErrNotMetrics, "text format"},
		{"another exporter", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "# TYPE node_load1 gauge\nnode_load1 0.5\n")
		}, "", ErrNotMetrics, "not a schedstatd daemon"},
		{"daemon before its first pass", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "# TYPE schedstatd_collections_total counter\nschedstatd_collections_total 0\n")
		}, "", ErrNotReady, "has not finished its first pass yet"},
		{"daemon without cgroups", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "# TYPE schedstatd_collections_total counter\nschedstatd_collections_total 3\n")
		}, "", ErrNoCgroups, "exports no cgroup"},
		{"unauthorized", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
		}, "", ErrUnauthorized, "basic_auth"},
		{"busy", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "too many scrapes", http.StatusServiceUnavailable)
		}, "", nil, "503 Service Unavailable: too many scrapes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url := tc.url
			if url == "" {
				url = serve(t, tc.handler).URL + "/metrics"
			}
			_, err := source(t, url, nil).Sample(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %q is not %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
		})
	}
}

// The daemon's web config asks for TLS and basic auth; the client config
// file gives the CA and the user.
func TestHTTPSTLSAndBasicAuth(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "prometheus" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", "Basic")
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, exposition)
	}))
	t.Cleanup(s.Close)
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, yml string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(yml), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yml", "basic_auth:\n  username: prometheus\n  password: s3cret\ntls_config:\n  ca_file: ca.pem\n")
	wrong := write("wrong.yml", "basic_auth:\n  username: prometheus\n  password: nope\ntls_config:\n  ca_file: ca.pem\n")
	for _, tc := range []struct {
		name, config string
		want         error
	}{
		{"trusted, right password", good, nil},
		{"trusted, wrong password", wrong, ErrUnauthorized},
		{"untrusted", "", ErrUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, err := NewHTTPClient(tc.config, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			_, err = source(t, s.URL+"/metrics", client).Sample(context.Background())
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if tc.want == ErrUnreachable && !strings.Contains(err.Error(), "tls_config.ca_file") {
				t.Errorf("error %q does not say how to trust the certificate", err)
			}
		})
	}
	if _, err := NewHTTPClient(filepath.Join(dir, "missing.yml"), time.Second); err == nil {
		t.Error("a missing config file gives no error")
	}
	bad := write("bad.yml", "basic_auth: [\n")
	if _, err := NewHTTPClient(bad, time.Second); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("a malformed config file: %v", err)
	}
}

func TestHTTPBasicAuthFromURL(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "prometheus" || p != "s3cret" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, exposition)
	})
	src := source(t, strings.Replace(s.URL, "http://", "http://prometheus:s3cret@", 1), nil)
	if _, err := src.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(src.URL.Redacted(), "s3cret") {
		t.Errorf("the password shows in %s", src.URL.Redacted())
	}
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"localhost:10271", "http://localhost:10271/metrics"},
		{"http://127.0.0.1:10271", "http://127.0.0.1:10271/metrics"},
		{"https://node:10271/custom", "https://node:10271/custom"},
		{"http://[::1]:10271/metrics", "http://[::1]:10271/metrics"},
	} {
		u, err := ParseURL(tc.in)
		if err != nil || u.String() != tc.want {
			t.Errorf("ParseURL(%q) = %v, %v; want %s", tc.in, u, err, tc.want)
		}
	}
	for _, in := range []string{"ftp://host/metrics", "http://", "http://host:port:x/"} {
		if u, err := ParseURL(in); err == nil {
			t.Errorf("ParseURL(%q) = %v, want an error", in, u)
		}
	}
}

// A request that hangs ends with the context.
func TestHTTPSampleHonoursContext(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 16)
	t.Cleanup(func() {
		l.Close()
		for {
			select {
			case c := <-conns:
				c.Close()
			default:
				return
			}
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = source(t, "http://"+l.Addr().String()+"/metrics", nil).Sample(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the context's", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
}
