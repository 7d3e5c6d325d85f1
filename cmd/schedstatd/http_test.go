package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/collector"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/internal/testkit/testrun"
)

// flakyTree is a synthetic tree whose listing can be made to fail.
type flakyTree struct {
	*synth.Tree
	fail atomic.Bool
}

func (f *flakyTree) List(l *cgroupfs.Listing) error {
	if f.fail.Load() {
		return errors.New("cgroup root is gone")
	}
	return f.Tree.List(l)
}

func TestHealthzFollowsPasses(t *testing.T) {
	const interval = 20 * time.Millisecond
	tree := &flakyTree{Tree: synth.NewTree("/")}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	poller := collector.NewPoller(container.NewTable(tree, synth.NewKernel()), interval, logger)
	testrun.Background(t, poller.Run)
	srv := httptest.NewServer(newMux(&config{metricsPath: "/metrics", maxRequests: 2}, poller, logger, nil, nil))
	defer srv.Close()

	get := func() (int, string) {
		resp, err := http.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(); code != http.StatusOK || body != "ok\n" {
		t.Errorf("healthy: %d %q", code, body)
	}
	tree.fail.Store(true)
	time.Sleep(5 * interval)
	code, body := get()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "cgroup root is gone") || strings.Count(body, "\n") != 1 {
		t.Errorf("after failing passes: %d %q; want 503 and one line with the reason", code, body)
	}
	tree.fail.Store(false)
	if _, err := poller.Fresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(); code != http.StatusOK {
		t.Errorf("after recovery: %d", code)
	}
}

// blockingTree lists nothing until released.
type blockingTree struct {
	*synth.Tree
	release chan struct{}
}

func (b *blockingTree) List(l *cgroupfs.Listing) error {
	<-b.release
	return b.Tree.List(l)
}

func TestScrapeBeforeFirstPassIs503(t *testing.T) {
	tree := &blockingTree{Tree: synth.NewTree("/"), release: make(chan struct{})}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	poller := collector.NewPoller(container.NewTable(tree, synth.NewKernel()), time.Hour, logger)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		poller.Run(ctx)
		close(done)
	}()
	srv := httptest.NewServer(newMux(&config{metricsPath: "/metrics"}, poller, logger, nil, nil))
	defer srv.Close()
	defer func() {
		cancel()
		close(tree.release)
		<-done
	}()

	req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "0.2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "first pass has not finished") {
		t.Errorf("scrape before the first pass: %s %q, want 503 saying why", resp.Status, b)
	}
}
