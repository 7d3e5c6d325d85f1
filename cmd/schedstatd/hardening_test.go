package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
)

func TestStalledHeaderIsCutOff(t *testing.T) {
	e2e.RequireRoot(t)
	d := startDaemon(t, "--web.read-header-timeout=500ms")
	c, err := net.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: schedstatd\r\nX-Half: "); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadAll(c) // returns when the server closes the connection
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection still open after %v", time.Since(start))
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stalled client cut off after %v, want about 500ms", took)
	}
}

func TestHugeHeaderIsRefused(t *testing.T) {
	e2e.RequireRoot(t)
	d := startDaemon(t)
	req, _ := http.NewRequest("GET", "http://"+d.addr+"/metrics", nil)
	req.Header.Set("X-Huge", strings.Repeat("a", 2<<20))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		// Closing the connection mid-request is a refusal too.
		t.Logf("2 MB header: %v", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("2 MB header: %s, want 431", resp.Status)
	}
}

// TestConcurrentScrapesServedOrRefused sends a burst of scrapes, more
// than --web.max-requests: each is served whole or refused with 503 and
// the reason, at least one is served, and afterwards the daemon serves
// scrapes and reports healthy again. On a loaded machine the burst may
// delay passes past the health limit for a moment, so health is awaited,
// not demanded at once.
func TestConcurrentScrapesServedOrRefused(t *testing.T) {
	e2e.RequireRoot(t)
	d := startDaemon(t, "--web.max-requests=5", "--collect.interval=100ms")
	const scrapes = 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range scrapes {
		wg.Go(func() {
			resp, err := http.Get("http://" + d.addr + "/metrics")
			if err != nil {
				t.Error(err)
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case err != nil:
				t.Errorf("%s: body cut short: %v", resp.Status, err)
			case resp.StatusCode == http.StatusOK && !strings.Contains(string(body), "schedstatd_collections_total"):
				t.Errorf("200 without the daemon's metrics: %.200q", body)
			case resp.StatusCode == http.StatusServiceUnavailable && !strings.Contains(string(body), "too many scrapes in flight") && !strings.Contains(string(body), "first pass"):
				t.Errorf("503 without a reason: %q", body)
			}
			mu.Lock()
			codes[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	t.Logf("status codes of %d concurrent scrapes: %v", scrapes, codes)
	if codes[http.StatusOK]+codes[http.StatusServiceUnavailable] != scrapes || codes[http.StatusOK] == 0 {
		t.Errorf("codes %v: want every scrape served (200) or refused (503), some served", codes)
	}
	scrape(t, http.DefaultClient, "http://"+d.addr+"/metrics")
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + d.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not healthy again within 30s of the burst: %v %v", resp, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSIGTERMDuringPasses stops a daemon whose scrapes run passes back to back
// while scrapes come in, so the signal lands in the middle of one: it
// must finish cleanly.
func TestSIGTERMDuringPasses(t *testing.T) {
	e2e.RequireRoot(t)
	for i := range 3 {
		d := startDaemon(t, "--collect.interval=100ms")
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if resp, err := http.Get("http://" + d.addr + "/metrics"); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
		time.Sleep(time.Duration(100+37*i) * time.Millisecond)
		d.stop(t)
		close(stop)
		wg.Wait()
		if !strings.Contains(d.log(), "stopped; all task fds closed") {
			t.Errorf("run %d: no clean stop in the log:\n%s", i, d.log())
		}
	}
}

// TestLogsToNowhere runs the daemon with its log going to a full disk
// (/dev/full) and to a pipe whose reader has gone: it serves and stops
// cleanly, neither failing on ENOSPC nor dying of SIGPIPE.
func TestLogsToNowhere(t *testing.T) {
	e2e.RequireRoot(t)
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		e2e.Unavailable(t, "no /dev/full")
	}
	defer full.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // nobody will read the log
	defer w.Close()
	for name, stderr := range map[string]*os.File{"full disk": full, "closed pipe": w} {
		t.Run(name, func(t *testing.T) {
			addr := freeAddr(t)
			cmd := exec.Command(binary(t), "--web.listen-address="+addr, "--log.level=debug", "--state.path=")
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			waitListening(t, addr)
			resp, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			first, _ := bufio.NewReader(resp.Body).ReadString('\n')
			resp.Body.Close()
			if !strings.HasPrefix(first, "# HELP") {
				t.Errorf("metrics start with %q", first)
			}
			cmd.Process.Signal(syscall.SIGTERM)
			err = cmd.Wait()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Errorf("daemon ended with %v (%v)", err, ee.ProcessState)
			} else if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// waitListening waits until something accepts connections on addr.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
