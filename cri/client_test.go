package cri

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/collector"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/fakecri"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/internal/testkit/testrun"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// node is a synthetic cgroup tree that tests edit while a poller lists it.
type node struct {
	mu   sync.Mutex
	tree *synth.Tree
}

func (n *node) List(l *cgroupfs.Listing) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.tree.List(l)
}

// add adds a cgroup listing tids.
func (n *node) add(path string, tids ...int32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.tree.Mkdir(path)
	n.tree.Set(path, tids...)
}

// logBuffer collects log lines from any goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// count returns the number of lines that contain s.
func (b *logBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// harness is an exporter labelled by a Client, over a synthetic node with
// the pod web-0 (containers web and sidecar, and its pause container), a
// pod the runtime does not know and a docker container outside Kubernetes.
type harness struct {
	t      *testing.T
	node   *node
	poller *collector.Poller
	client *Client
	reg    *prometheus.Registry
	logs   *logBuffer
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	return newHarnessEvery(t, cfg, time.Hour, false)
}

// newHarnessEvery is newHarness with background passes every interval
// and, if notice, the client told of each pass's cgroups before the next,
// as the daemon does.
func newHarnessEvery(t *testing.T, cfg Config, interval time.Duration, notice bool) *harness {
	t.Helper()
	k := synth.NewKernel()
	for tid := int32(1); tid <= 20; tid++ {
		k.Spawn(tid).Stat.RunNanoseconds = uint64(tid) * 1e6
	}
	n := &node{tree: synth.NewTree("/", "/kubepods.slice", "/kubepods.slice/kubepods-burstable.slice", podWeb,
		scope(podWeb, ctrWeb), scope(podWeb, ctrSidecar), scope(podWeb, sandboxWeb),
		"/kubepods.slice/kubepods-besteffort.slice", podOther, "/system.slice", "/system.slice/docker-"+dockerID+".scope")}
	n.tree.Set(scope(podWeb, ctrWeb), 1, 2)
	n.tree.Set(scope(podWeb, ctrSidecar), 3)
	n.tree.Set(scope(podWeb, sandboxWeb), 4)
	n.tree.Set(podOther, 5)
	n.tree.Set("/system.slice/docker-"+dockerID+".scope", 6)

	logs := &logBuffer{}
	quiet := slog.New(slog.DiscardHandler)
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	client, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })

	// With an interval of an hour a background pass never comes: passes
	// run when a scrape asks.
	p := collector.NewPoller(container.NewTable(n, k), interval, quiet)
	if notice {
		p.BeforePass(func(*container.Table) { client.Notice(p.Last()) })
	}
	testrun.Background(t, p.Run)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector.NewExporter(p, collector.WithLabeler(client)), client)
	return &harness{t: t, node: n, poller: p, client: client, reg: reg, logs: logs}
}

// scrape does what the daemon does for a scrape: a fresh pass, then a
// gather. It returns the labels of each cgroup's series by id, and the
// runtime metrics by name.
func (h *harness) scrape() (map[string]collector.ContainerLabels, map[string]float64) {
	h.t.Helper()
	if _, err := h.poller.Fresh(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	series := map[string]collector.ContainerLabels{}
	values := map[string]float64{}
	for _, mf := range mfs {
		switch name := mf.GetName(); {
		case name == "container_schedstat_tasks":
			for _, m := range mf.GetMetric() {
				l := map[string]string{}
				for _, lp := range m.GetLabel() {
					l[lp.GetName()] = lp.GetValue()
				}
				series[l["id"]] = collector.ContainerLabels{Container: l["container"], Pod: l["pod"], Namespace: l["namespace"], Image: l["image"]}
			}
		case strings.HasPrefix(name, "schedstatd_runtime_"):
			m := mf.GetMetric()[0]
			values[name] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return series, values
}

// eventually scrapes until ok holds, failing after a deadline.
func (h *harness) eventually(what string, ok func(map[string]collector.ContainerLabels, map[string]float64) bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		series, values := h.scrape()
		if ok(series, values) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not within 10s; last scrape: %v %v\nlogs:\n%s", what, series, values, h.logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func isUp(_ map[string]collector.ContainerLabels, v map[string]float64) bool {
	return v["schedstatd_runtime_up"] == 1
}

// webRuntime is a runtime that runs the pod web-0.
func webRuntime() *fakecri.Runtime {
	f := fakecri.New()
	f.AddPod(sandboxWeb, uidWeb, "web-0", "shop")
	f.AddContainer(ctrWeb, sandboxWeb, uidWeb, "web", "web-0", "shop", "nginx:1.27")
	f.AddContainer(ctrSidecar, sandboxWeb, uidWeb, "sidecar", "web-0", "shop", "registry.example.com:5000/team/envoy:v1")
	return f
}

// TestLabelsOnSeries checks that the runtime's names land on the right
// series, and only there, in the exported text.
func TestLabelsOnSeries(t *testing.T) {
	srv := fakecri.Start(t, webRuntime())
	h := newHarness(t, Config{Endpoint: srv.Endpoint(), Interval: time.Hour})
	h.eventually("runtime up", isUp)

	if _, err := h.poller.Fresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP container_schedstat_tasks Live tasks (threads) listed in the cgroup and its descendants at the last pass.
# TYPE container_schedstat_tasks gauge
container_schedstat_tasks{container="",id="/",image="",name="/",namespace="",pod=""} 6
container_schedstat_tasks{container="",id="/kubepods.slice",image="",name="kubepods.slice",namespace="",pod=""} 5
container_schedstat_tasks{container="",id="/kubepods.slice/kubepods-besteffort.slice",image="",name="kubepods-besteffort.slice",namespace="",pod=""} 1
container_schedstat_tasks{container="",id="` + podOther + `",image="",name="kubepods-besteffort-pod6c2a7f1e_3b4d_4e5f_8a9b_0c1d2e3f4a5b.slice",namespace="",pod=""} 1
container_schedstat_tasks{container="",id="/kubepods.slice/kubepods-burstable.slice",image="",name="kubepods-burstable.slice",namespace="",pod=""} 4
container_schedstat_tasks{container="",id="` + podWeb + `",image="",name="kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice",namespace="shop",pod="web-0"} 4
container_schedstat_tasks{container="web",id="` + scope(podWeb, ctrWeb) + `",image="docker.io/library/nginx:1.27",name="` + ctrWeb + `",namespace="shop",pod="web-0"} 2
container_schedstat_tasks{container="sidecar",id="` + scope(podWeb, ctrSidecar) + `",image="registry.example.com:5000/team/envoy:v1",name="` + ctrSidecar + `",namespace="shop",pod="web-0"} 1
container_schedstat_tasks{container="",id="` + scope(podWeb, sandboxWeb) + `",image="",name="` + sandboxWeb + `",namespace="shop",pod="web-0"} 1
container_schedstat_tasks{container="",id="/system.slice",image="",name="system.slice",namespace="",pod=""} 1
container_schedstat_tasks{container="",id="/system.slice/docker-` + dockerID + `.scope",image="",name="` + dockerID + `",namespace="",pod=""} 1
# HELP schedstatd_runtime_up 1 if the last refresh from the container runtime (CRI) succeeded, else 0; labels then keep their last known values.
# TYPE schedstatd_runtime_up gauge
schedstatd_runtime_up 1
# HELP schedstatd_runtime_containers Containers (all states) in the cache of container runtime names.
# TYPE schedstatd_runtime_containers gauge
schedstatd_runtime_containers 2
`
	if err := testutil.GatherAndCompare(h.reg, strings.NewReader(want), "container_schedstat_tasks", "schedstatd_runtime_up", "schedstatd_runtime_containers"); err != nil {
		t.Error(err)
	}
	if n := h.logs.count("container runtime answers"); n != 1 {
		t.Errorf("%d lines say the runtime answers, want 1:\n%s", n, h.logs)
	}
	problems, err := testutil.GatherAndLint(h.reg, "schedstatd_runtime_up", "schedstatd_runtime_refreshes_total", "schedstatd_runtime_refresh_errors_total", "schedstatd_runtime_containers")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestNewContainerLabelledOnFirstScrape: the client is told of the
// cgroups of every background pass, so a container that appears between
// scrapes is named before the first scrape that shows it, with no
// periodic refresh (the interval is an hour). Its cgroup is of the shape
// kubelet's systemd driver asks a cgroupfs runtime for.
func TestNewContainerLabelledOnFirstScrape(t *testing.T) {
	f := webRuntime()
	srv := fakecri.Start(t, f)
	h := newHarnessEvery(t, Config{Endpoint: srv.Endpoint(), Interval: time.Hour, MinGap: 50 * time.Millisecond}, 20*time.Millisecond, true)
	h.eventually("runtime up", isUp)
	_, before := h.scrape()

	f.AddContainer(ctrLate, sandboxWeb, uidWeb, "worker", "web-0", "shop", "busybox:1.36")
	late := "/kubepods-burstable-pod" + strings.ReplaceAll(uidWeb, "-", "_") + ".slice:cri-containerd:" + ctrLate
	h.node.add(late, 7)
	// No scrape: only background passes see the new cgroup.
	deadline := time.Now().Add(10 * time.Second)
	for !h.client.cache.Load().has(key{id: ctrLate}) {
		if time.Now().After(deadline) {
			t.Fatalf("the runtime was not asked for the new container within 10s:\n%s", h.logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	series, after := h.scrape()
	want := collector.ContainerLabels{Container: "worker", Pod: "web-0", Namespace: "shop", Image: "docker.io/library/busybox:1.36"}
	if diff := cmp.Diff(want, series[late]); diff != "" {
		t.Errorf("the first scrape of the new container (-want +got):\n%s", diff)
	}
	if n := after["schedstatd_runtime_refreshes_total"] - before["schedstatd_runtime_refreshes_total"]; n < 1 || n > 3 {
		t.Errorf("%v refreshes for one new container, want 1 (a few at most)", n)
	}
}

// TestSandboxImage: a pod's sandbox (pause) container's cgroup has the
// image the runtime runs sandboxes from, as its verbose Status says; the
// pod's cgroup has none.
func TestSandboxImage(t *testing.T) {
	f := webRuntime()
	f.SetSandboxImage("registry.k8s.io/pause:3.9")
	srv := fakecri.Start(t, f)
	h := newHarness(t, Config{Endpoint: srv.Endpoint(), Interval: time.Hour})
	h.eventually("runtime up", isUp)
	series, _ := h.scrape()
	if diff := cmp.Diff(collector.ContainerLabels{Pod: "web-0", Namespace: "shop", Image: "registry.k8s.io/pause:3.9"}, series[scope(podWeb, sandboxWeb)]); diff != "" {
		t.Errorf("sandbox cgroup (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(collector.ContainerLabels{Pod: "web-0", Namespace: "shop"}, series[podWeb]); diff != "" {
		t.Errorf("pod cgroup (-want +got):\n%s", diff)
	}
}

// TestRuntimeAbsent starts with no socket at all: scrapes work, nothing is
// labelled, schedstatd_runtime_up is 0, and one line says why.
func TestRuntimeAbsent(t *testing.T) {
	h := newHarness(t, Config{Endpoint: "unix://" + filepath.Join(fakecri.SocketDir(t), "none.sock"), Interval: 20 * time.Millisecond, RetryAfter: 20 * time.Millisecond})
	h.eventually("refreshes failed", func(_ map[string]collector.ContainerLabels, v map[string]float64) bool {
		return v["schedstatd_runtime_refresh_errors_total"] >= 3
	})
	series, values := h.scrape()
	if values["schedstatd_runtime_up"] != 0 {
		t.Errorf("schedstatd_runtime_up = %v with no socket", values["schedstatd_runtime_up"])
	}
	for id, l := range series {
		if l != (collector.ContainerLabels{}) {
			t.Errorf("%s labelled %+v with no runtime", id, l)
		}
	}
	if len(series) != 11 {
		t.Errorf("%d cgroup series, want 11", len(series))
	}
	if n := h.logs.count("container runtime unavailable"); n != 1 || !strings.Contains(h.logs.String(), "none.sock") {
		t.Errorf("%d lines say the runtime is unavailable, want 1 naming the socket:\n%s", n, h.logs)
	}
}

// TestSlowRuntimeDoesNotDelayScrape serves a runtime whose every call
// takes 10 s. Calls end at the call timeout, the runtime counts as down,
// and scrapes taken while a call is in flight answer without waiting for
// it.
func TestSlowRuntimeDoesNotDelayScrape(t *testing.T) {
	const callTimeout = 500 * time.Millisecond
	f := webRuntime()
	f.SetDelay(10 * time.Second)
	srv := fakecri.Start(t, f)
	start := time.Now()
	// Unknown ids ask for refreshes all the time: the worst case.
	h := newHarness(t, Config{Endpoint: srv.Endpoint(), CallTimeout: callTimeout, Interval: time.Hour, MinGap: time.Millisecond, RetryAfter: time.Millisecond})
	h.eventually("first refresh failed", func(_ map[string]collector.ContainerLabels, v map[string]float64) bool {
		return v["schedstatd_runtime_refresh_errors_total"] >= 1
	})
	if d := time.Since(start); d > 3*callTimeout {
		t.Errorf("the first refresh failed after %v; a call should end at its %v timeout", d, callTimeout)
	}

	var inFlight int
	var slowest time.Duration
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		busy := f.InFlight() > 0
		t0 := time.Now()
		_, values := h.scrape()
		d := time.Since(t0)
		if values["schedstatd_runtime_up"] != 0 {
			t.Fatalf("schedstatd_runtime_up = %v while every call times out", values["schedstatd_runtime_up"])
		}
		if busy && f.InFlight() > 0 {
			inFlight++
			slowest = max(slowest, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if inFlight < 10 {
		t.Fatalf("only %d scrapes ran while a call was in flight; the test proves nothing", inFlight)
	}
	// A scrape does not wait on the runtime at all; one that did would
	// take the whole call timeout. Half of it leaves room for a slow,
	// loaded machine.
	if slowest > callTimeout/2 {
		t.Errorf("slowest of %d scrapes during a runtime call took %v", inFlight, slowest)
	}
	t.Logf("%d scrapes during runtime calls, slowest %v", inFlight, slowest)

	t0 := time.Now()
	h.client.Close()
	if d := time.Since(t0); d > callTimeout/2 {
		t.Errorf("Close took %v with a call in flight; it should cancel the call", d)
	}
}

// TestUnknownIdsRateLimited scrapes for a second a node whose pod and
// docker container the runtime never knows: the misses cost a refresh per
// RetryAfter, not one per scrape or per MinGap.
func TestUnknownIdsRateLimited(t *testing.T) {
	f := webRuntime()
	srv := fakecri.Start(t, f)
	const retry = 300 * time.Millisecond
	h := newHarness(t, Config{Endpoint: srv.Endpoint(), Interval: time.Hour, MinGap: 10 * time.Millisecond, RetryAfter: retry})
	h.eventually("runtime up", isUp)
	base := f.ListContainersCalls()
	scrapes := 0
	for end := time.Now().Add(time.Second); time.Now().Before(end); scrapes++ {
		h.scrape()
		time.Sleep(2 * time.Millisecond)
	}
	got := f.ListContainersCalls() - base
	// One refresh for the first misses, then one per RetryAfter.
	if limit := int64(time.Second/retry) + 2; got < 1 || got > limit {
		t.Errorf("%d scrapes over 1s asked for %d ListContainers, want 1 to %d", scrapes, got, limit)
	}
	t.Logf("%d scrapes, %d refreshes", scrapes, got)
}

// TestImageNamesKeptWhenListImagesFails: a ListImages that fails after
// one that answered (the runtime going down between the calls of a
// refresh) keeps the names the last one gave, not the image ids.
func TestImageNamesKeptWhenListImagesFails(t *testing.T) {
	f := webRuntime()
	f.Edit(func(l *fakecri.Lists) {
		for _, c := range l.Containers {
			c.Image.UserSpecifiedImage = ""
		}
		l.Images = []*runtimeapi.Image{{Id: "sha256:" + ctrWeb, RepoTags: []string{"docker.io/library/nginx:1.27"}}}
	})
	srv := fakecri.Start(t, f)
	h := newHarness(t, Config{Endpoint: srv.Endpoint(), Interval: 20 * time.Millisecond, MinGap: time.Millisecond})
	h.eventually("runtime up", isUp)
	named := func(what string) {
		t.Helper()
		series, _ := h.scrape()
		if got := series[scope(podWeb, ctrWeb)].Image; got != "docker.io/library/nginx:1.27" {
			t.Errorf("%s: image %q", what, got)
		}
	}
	named("ListImages answering")
	f.FailListImages(errors.New("going down"))
	deadline := time.Now().Add(10 * time.Second)
	for calls := f.ListImagesCalls(); f.ListImagesCalls() < calls+3; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no refresh called ListImages again in 10s")
		}
	}
	named("ListImages failing")
}

// TestImageIDsNamedFromListImages serves containers that name their image
// by id only (kubelets before 1.30): the label comes from ListImages.
func TestImageIDsNamedFromListImages(t *testing.T) {
	f := webRuntime()
	f.Edit(func(l *fakecri.Lists) {
		for _, c := range l.Containers {
			c.Image.UserSpecifiedImage = ""
		}
		l.Images = []*runtimeapi.Image{
			{Id: "sha256:" + ctrWeb, RepoTags: []string{"docker.io/library/nginx:1.27"}},
			{Id: "sha256:" + ctrSidecar, RepoDigests: []string{"quay.io/envoy@sha256:" + ctrSidecar}},
		}
	})
	srv := fakecri.Start(t, f)
	h := newHarness(t, Config{Endpoint: srv.Endpoint(), Interval: time.Hour})
	h.eventually("runtime up", isUp)
	series, _ := h.scrape()
	if got := series[scope(podWeb, ctrWeb)].Image; got != "docker.io/library/nginx:1.27" {
		t.Errorf("image by tag: %q", got)
	}
	if got := series[scope(podWeb, ctrSidecar)].Image; got != "quay.io/envoy@sha256:"+ctrSidecar {
		t.Errorf("image by digest: %q", got)
	}
	if n := f.ListImagesCalls(); n != 1 {
		t.Errorf("%d ListImages calls, want 1", n)
	}
}
