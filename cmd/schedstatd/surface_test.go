package main

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
)

// passes returns schedstatd_collections_total of one scrape, which runs a
// pass itself.
func passes(t *testing.T, d *daemon) float64 {
	t.Helper()
	mfs := scrape(t, http.DefaultClient, "http://"+d.addr+"/metrics")
	return mfs["schedstatd_collections_total"].GetMetric()[0].GetCounter().GetValue()
}

// TestMetricsOnlyByGET: other methods on /metrics are answered 405 and
// run no pass (the background passes are an hour apart, so only scrapes
// run them).
func TestMetricsOnlyByGET(t *testing.T) {
	e2e.RequireRoot(t)
	d := startDaemon(t, "--collect.interval=1h")
	before := passes(t, d)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodOptions, http.MethodDelete, http.MethodPatch} {
		req, _ := http.NewRequest(m, "http://"+d.addr+"/metrics", strings.NewReader("x"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /metrics: %s, Allow %q; want 405 and GET, HEAD", m, resp.Status, resp.Header.Get("Allow"))
		}
	}
	resp, err := http.Head("http://" + d.addr + "/metrics")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD /metrics: %v %v", resp, err)
	}
	// The HEAD ran one pass; the refused methods none.
	if after := passes(t, d); after != before+2 {
		t.Errorf("passes went from %v to %v over 5 refused requests, a HEAD and a GET; want %v", before, after, before+2)
	}
}

// TestOpenMetricsWhenAsked: a scraper that asks for OpenMetrics gets it,
// (promtool reads only the text format); one that does not gets the
// text format.
func TestOpenMetricsWhenAsked(t *testing.T) {
	e2e.RequireRoot(t)
	d := startDaemon(t)
	req, _ := http.NewRequest(http.MethodGet, "http://"+d.addr+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("Content-Type %q, want OpenMetrics", ct)
	}
	if !bytes.HasSuffix(body, []byte("# EOF\n")) || !bytes.Contains(body, []byte("# TYPE container_cpu_schedstat_run_seconds counter")) {
		t.Errorf("not OpenMetrics:\n%.600s", body)
	}
	plain, err := http.Get("http://" + d.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	plain.Body.Close()
	if ct := plain.Header.Get("Content-Type"); expfmt.ResponseFormat(plain.Header).FormatType() != expfmt.TypeTextPlain {
		t.Errorf("without Accept: Content-Type %q, want the text format", ct)
	}
}

// TestLandingPageLinksWork follows every link of the landing page that
// points at the daemon: each answers 200.
func TestLandingPageLinksWork(t *testing.T) {
	e2e.RequireRoot(t)
	d := startDaemon(t)
	base, _ := url.Parse("http://" + d.addr + "/")
	resp, err := http.Get(base.String())
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	links := regexp.MustCompile(`href="([^"]+)"`).FindAllStringSubmatch(string(page), -1)
	n := 0
	for _, l := range links {
		u, err := base.Parse(l[1])
		if err != nil || u.Host != base.Host {
			continue
		}
		n++
		r, err := http.Get(u.String())
		if err != nil {
			t.Errorf("%s: %v", u, err)
			continue
		}
		r.Body.Close()
		if r.StatusCode != http.StatusOK {
			t.Errorf("the landing page links %s, which answers %s", l[1], r.Status)
		}
	}
	if n < 2 {
		t.Errorf("%d links to the daemon on the landing page, want metrics and health:\n%s", n, page)
	}
}

// TestSIGHUP sends SIGHUP, without and with a web config file: the daemon
// logs it, goes on serving, and still stops cleanly on SIGTERM.
func TestSIGHUP(t *testing.T) {
	e2e.RequireRoot(t)
	cfg := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(cfg, []byte("http_server_config:\n  http2: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		logs string
	}{
		{nil, "SIGHUP: nothing to reload"},
		{[]string{"--web.config.file=" + cfg}, "SIGHUP: the web config file is valid"},
	} {
		d := startDaemon(t, tc.args...)
		for range 3 {
			if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(d.log(), tc.logs) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !strings.Contains(d.log(), tc.logs) {
			t.Errorf("%v: no %q in the log:\n%s", tc.args, tc.logs, d.log())
		}
		if resp, err := http.Get("http://" + d.addr + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%v: after SIGHUP: %v %v", tc.args, resp, err)
		}
		d.stop(t)
		if !strings.Contains(d.log(), "stopped; all task fds closed") {
			t.Errorf("%v: no clean stop after SIGHUP:\n%s", tc.args, d.log())
		}
	}
}

// TestHelpAndVersionOnStdout: --help and --version print to stdout and
// exit 0, and the build (make build) fills every version field.
func TestHelpAndVersionOnStdout(t *testing.T) {
	bin := plainBinary(t)
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--version"}, {"top", "--help"}} {
		cmd := exec.Command(bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("%v: %v", args, err)
		}
		if stdout.Len() == 0 || stderr.Len() != 0 {
			t.Errorf("%v: %d bytes on stdout, stderr %q; want it all on stdout", args, stdout.Len(), stderr.String())
		}
		if args[0] != "--version" {
			continue
		}
		v := stdout.String()
		for _, field := range []*regexp.Regexp{
			regexp.MustCompile(`version (\S+) `), regexp.MustCompile(`branch: ([^,)]+)`), regexp.MustCompile(`revision: ([0-9a-f]{40})`),
			regexp.MustCompile(`build user:\s+(\S+@\S+)`), regexp.MustCompile(`build date:\s+(\d{8}-\S+)`),
		} {
			if m := field.FindStringSubmatch(v); m == nil || strings.TrimSpace(m[1]) == "" {
				t.Errorf("--version has no %s:\n%s", field, v)
			}
		}
	}
}

// TestTopHelpListsTopFlags: top's help names only the flags top uses.
func TestTopHelpListsTopFlags(t *testing.T) {
	out, err := exec.Command(binary(t), "top", "--help").Output()
	if err != nil {
		t.Fatal(err)
	}
	help := string(out)
	for _, want := range []string{"--from", "--once", "--interval", "--view", "--path.procfs", "--path.cgroupfs", "--cgroup.hierarchy", "--log.level"} {
		if !strings.Contains(help, want) {
			t.Errorf("top --help lacks %s", want)
		}
	}
	for _, daemonOnly := range []string{"--web.", "--collect.", "--exit-capture", "--container-runtime-endpoint"} {
		if strings.Contains(help, daemonOnly) {
			t.Errorf("top --help lists the daemon's %s flags:\n%s", daemonOnly, help)
		}
	}
	var exit *exec.ExitError
	if err := exec.Command(binary(t), "top", "--collect.interval=1s", "--once").Run(); !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Errorf("top with a daemon flag: %v, want exit status 2", err)
	}
}

// TestNonRootNamesTheCause starts the daemon as an unprivileged user: the
// BPF sources are refused with EPERM, and the log says which capabilities
// are missing, not cilium/ebpf's guess about RLIMIT_MEMLOCK; with
// --exit-capture=on the refusal names the flag once.
func TestNonRootNamesTheCause(t *testing.T) {
	e2e.RequireRoot(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		e2e.Unavailable(t, "no setpriv(1)")
	}
	nobody := []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"}
	d := startWrapped(t, nobody)
	for _, l := range strings.Split(d.log(), "\n") {
		if strings.Contains(l, "unavailable") && (!strings.Contains(l, "EPERM") || !strings.Contains(l, "CAP_BPF and CAP_PERFMON") || strings.Contains(l, "MEMLOCK")) {
			t.Errorf("the fallback does not name the cause: %s", l)
		}
	}
	if !strings.Contains(d.log(), "task iterator unavailable") || !strings.Contains(d.log(), "exit capture unavailable") {
		t.Errorf("no word of the BPF sources in the log:\n%s", d.log())
	}

	cmd := exec.Command(nobody[0], append(nobody[1:], binary(t), "--web.listen-address="+freeAddr(t), "--exit-capture=on")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var exit *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("--exit-capture=on as nobody: %v, want exit status 1:\n%s", err, stderr.String())
	}
	var failed string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, "schedstatd failed") {
			failed = l
		}
	}
	if strings.Count(failed, "--exit-capture=on") != 1 || !strings.Contains(failed, "EPERM") || strings.Contains(failed, "MEMLOCK") {
		t.Errorf("the refusal: %q; want --exit-capture=on once and EPERM", failed)
	}
}
