package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/collector"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/internal/testkit/testrun"
	"github.com/schedstatd/schedstatd/schedlat"
)

// webLabeler names the cgroup /kubepods/web.
type webLabeler struct{}

func (webLabeler) Labels(id cgroupfs.Identity) collector.ContainerLabels {
	if id.ID == "/kubepods/web" {
		return collector.ContainerLabels{Container: "web", Pod: "web-0", Namespace: "shop"}
	}
	return collector.ContainerLabels{}
}

// TestPreemptionsAnswer names the pairs of a window by the cgroups of the
// last pass: a path and the container's names where known, "kernel" for
// kernel threads, the bare id for a cgroup the pass did not list.
func TestPreemptionsAnswer(t *testing.T) {
	tree := synth.NewTree("/", "/kubepods", "/kubepods/web", "/kubepods/batch")
	poller := collector.NewPoller(container.NewTable(tree, synth.NewKernel()), time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	testrun.Background(t, poller.Run)
	if _, err := poller.Fresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	web, batch := tree.ID("/kubepods/web"), tree.ID("/kubepods/batch")
	start := time.Unix(1e9, 0)
	win := schedlat.PairWindow{Start: start, End: start.Add(2 * time.Second), Total: 31, Distinct: 3, Pairs: []schedlat.PairCount{
		{Pair: schedlat.Pair{Victim: web, Preemptor: batch}, Preemptions: 20},
		{Pair: schedlat.Pair{Victim: web, Preemptor: 0}, Preemptions: 10},
		{Pair: schedlat.Pair{Victim: 999, Preemptor: batch}, Preemptions: 1},
	}}
	got := preemptionsAnswer(win, poller, webLabeler{})
	want := preemptionsJSON{Start: start, End: start.Add(2 * time.Second), Seconds: 2, Total: 31, Pairs: 3, Top: []pairJSON{
		{Victim: cgroupJSON{ID: "/kubepods/web", CgroupID: web, Name: "web", Container: "web", Pod: "web-0", Namespace: "shop"},
			Preemptor: cgroupJSON{ID: "/kubepods/batch", CgroupID: batch, Name: "batch"}, Preemptions: 20, PerSecond: 10},
		{Victim: cgroupJSON{ID: "/kubepods/web", CgroupID: web, Name: "web", Container: "web", Pod: "web-0", Namespace: "shop"},
			Preemptor: cgroupJSON{Kernel: true}, Preemptions: 10, PerSecond: 5},
		{Victim: cgroupJSON{CgroupID: 999}, Preemptor: cgroupJSON{ID: "/kubepods/batch", CgroupID: batch, Name: "batch"}, Preemptions: 1, PerSecond: 0.5},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// Without --collect.preemption the path answers 404 and says why;
	// other paths go on to the daemon's handler; only GET and HEAD.
	src := &sources{pairs: schedlat.NewTracker(nil, 0)}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	srv := httptest.NewServer(src.withPreemptions(next, &config{maxRequests: 2}, poller))
	t.Cleanup(srv.Close)
	for path, code := range map[string]int{preemptionsPath: http.StatusNotFound, "/metrics": http.StatusTeapot} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, code)
		}
	}
	resp, err := http.Post(srv.URL+preemptionsPath, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
	if _, err := json.Marshal(got); err != nil {
		t.Error(err)
	}
}
