package cri

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/collector"
	"github.com/schedstatd/schedstatd/internal/testkit/fakecri"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Ids the tests use: container and sandbox ids of 64 hex digits, and pod
// uids with dashes (as the CRI has them) and with underscores (as the
// systemd driver writes them in slice names).
const (
	ctrWeb     = "4f1d5c2a9b8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a392817065f4e"
	ctrSidecar = "6c8b4535ccc87f19061c4646189e33d78f01c8b63dc4e3cb2f630b1796ee93b6"
	ctrLate    = "a172cedcae47474b615c54d510a5d84a8dea3032e958587430b413538be3f333"
	sandboxWeb = "9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7"
	dockerID   = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
	uidWeb     = "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901"
	uidOther   = "6c2a7f1e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
)

// Cgroup paths of the systemd driver on a containerd node.
const (
	podWeb   = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice"
	podOther = "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod6c2a7f1e_3b4d_4e5f_8a9b_0c1d2e3f4a5b.slice"
)

func scope(pod, id string) string { return pod + "/cri-containerd-" + id + ".scope" }

// offlineClient is a Client with a cache and no refresher, for tests of
// Labels alone.
func offlineClient(c *cache) *Client {
	cl := &Client{
		cfg:     Config{RetryAfter: DefaultRetryAfter},
		pending: make(map[key]struct{}),
		absent:  make(map[key]struct{}),
		kick:    make(chan struct{}, 1),
	}
	cl.cache.Store(c)
	return cl
}

// webCache is what a refresh of a runtime running the pod web-0 (containers
// web and sidecar) learns.
func webCache() *cache {
	l := webRuntime().Lists()
	return build(l.Sandboxes, l.Containers, nil, "")
}

func TestLabelsByCgroupShape(t *testing.T) {
	web := collector.ContainerLabels{Container: "web", Pod: "web-0", Namespace: "shop", Image: "docker.io/library/nginx:1.27"}
	pod := collector.ContainerLabels{Pod: "web-0", Namespace: "shop"}
	tests := []struct {
		name     string
		path     string
		want     collector.ContainerLabels
		wantMiss bool
	}{
		{"container, systemd driver", scope(podWeb, ctrWeb), web, false},
		{"container, cgroupfs driver", "/kubepods/burstable/pod" + uidWeb + "/" + ctrWeb, web, false},
		{"container, cri-o", podWeb + "/crio-" + ctrWeb + ".scope", web, false},
		{"second container", scope(podWeb, ctrSidecar),
			collector.ContainerLabels{Container: "sidecar", Pod: "web-0", Namespace: "shop", Image: "registry.example.com:5000/team/envoy:v1"}, false},
		{"pod cgroup", podWeb, pod, false},
		{"pod cgroup, cgroupfs driver", "/kubepods/burstable/pod" + uidWeb, pod, false},
		{"sandbox (pause) container", scope(podWeb, sandboxWeb), pod, false},
		{"cri-o monitor of a container", podWeb + "/crio-conmon-" + ctrWeb + ".scope", pod, false},
		{"cgroup nested in a container", scope(podWeb, ctrWeb) + "/init.scope", pod, false},
		{"unknown container in a known pod", scope(podWeb, ctrLate), pod, true},
		{"unknown pod", podOther, collector.ContainerLabels{}, true},
		{"docker container outside Kubernetes", "/system.slice/docker-" + dockerID + ".scope", collector.ContainerLabels{}, true},
		{"qos slice", "/kubepods.slice/kubepods-burstable.slice", collector.ContainerLabels{}, false},
		{"systemd unit", "/system.slice/kubelet.service", collector.ContainerLabels{}, false},
		{"root", "/", collector.ContainerLabels{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := offlineClient(webCache())
			got := c.Labels(cgroupfs.ParseIdentity(tt.path))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Labels(%s) (-want +got):\n%s", tt.path, diff)
			}
			if missed := len(c.kick) == 1; missed != tt.wantMiss {
				t.Errorf("asked for a refresh: %v, want %v", missed, tt.wantMiss)
			}
		})
	}
}

// TestLabelsMissAsksOnce checks that an id a refresh did not find asks
// again only after RetryAfter.
func TestLabelsMissAsksOnce(t *testing.T) {
	c := offlineClient(webCache())
	id := cgroupfs.ParseIdentity(scope(podWeb, ctrLate))
	c.Labels(id)
	c.Labels(id)
	if len(c.pending) != 1 || len(c.kick) != 1 {
		t.Fatalf("after two misses: %d pending, %d kicks; want 1 and 1", len(c.pending), len(c.kick))
	}
	<-c.kick
	// What a refresh that did not find the id leaves.
	c.pending = make(map[key]struct{})
	c.absent[key{id: ctrLate}] = struct{}{}
	c.Labels(id)
	if len(c.pending) != 0 || len(c.kick) != 0 {
		t.Errorf("a miss within RetryAfter of a refresh that looked: %d pending, %d kicks; want none", len(c.pending), len(c.kick))
	}
	c.absentAt = c.absentAt.Add(-c.cfg.RetryAfter)
	c.Labels(id)
	if len(c.pending) != 1 || len(c.kick) != 1 {
		t.Errorf("a miss after RetryAfter: %d pending, %d kicks; want 1 and 1", len(c.pending), len(c.kick))
	}
}

// TestLabelsAllocs pins that scrapes cost no allocation in Labels: neither
// a hit nor a miss of an id already looked for.
func TestLabelsAllocs(t *testing.T) {
	c := offlineClient(webCache())
	hit := cgroupfs.ParseIdentity(scope(podWeb, ctrWeb))
	pod := cgroupfs.ParseIdentity(podWeb)
	miss := cgroupfs.ParseIdentity(scope(podOther, ctrLate))
	c.absentAt = time.Now()
	c.absent[key{id: ctrLate}] = struct{}{}
	c.absent[key{id: uidOther, pod: true}] = struct{}{}
	if n := testing.AllocsPerRun(100, func() {
		c.Labels(hit)
		c.Labels(pod)
		c.Labels(miss)
	}); n != 0 {
		t.Errorf("Labels allocates %v times per call", n)
	}
}

func TestBuildFallbacks(t *testing.T) {
	sandboxes := []*runtimeapi.PodSandbox{{
		Id:       sandboxWeb,
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web-0", Uid: uidWeb, Namespace: "shop"},
	}}
	containers := []*runtimeapi.Container{
		// No kubelet labels: names from the metadata and the sandbox.
		{Id: ctrWeb, PodSandboxId: sandboxWeb, Metadata: &runtimeapi.ContainerMetadata{Name: "web"},
			Image: &runtimeapi.ImageSpec{Image: "nginx"}},
		// Its sandbox is gone: names and the pod uid from kubelet's labels.
		{Id: ctrLate, PodSandboxId: "gone", Metadata: &runtimeapi.ContainerMetadata{Name: "job"},
			Image: &runtimeapi.ImageSpec{Image: "sha256:" + dockerID}, ImageRef: "sha256:" + dockerID,
			Labels: map[string]string{labelPodName: "job-1", labelPodNamespace: "batch", labelPodUID: uidOther}},
	}
	got := build(sandboxes, containers, map[string]string{"sha256:" + dockerID: "docker.io/library/busybox:1.36"}, "")
	want := &cache{
		containers: map[string]collector.ContainerLabels{
			ctrWeb:  {Container: "web", Pod: "web-0", Namespace: "shop", Image: "docker.io/library/nginx:latest"},
			ctrLate: {Container: "job", Pod: "job-1", Namespace: "batch", Image: "docker.io/library/busybox:1.36"},
		},
		sandboxes: map[string]collector.ContainerLabels{sandboxWeb: {Pod: "web-0", Namespace: "shop"}},
		pods: map[string]collector.ContainerLabels{
			uidWeb:   {Pod: "web-0", Namespace: "shop"},
			uidOther: {Pod: "job-1", Namespace: "batch"},
		},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(cache{})); diff != "" {
		t.Errorf("build (-want +got):\n%s", diff)
	}
}

// TestFakeRuntimeLabelKeys checks that the fake runtime the tests serve
// labels its containers with the keys this package reads, so the tests
// that use it check what a real runtime's lists give.
func TestFakeRuntimeLabelKeys(t *testing.T) {
	for _, k := range []struct{ fake, ours string }{
		{fakecri.LabelContainerName, labelContainerName},
		{fakecri.LabelPodName, labelPodName},
		{fakecri.LabelPodNamespace, labelPodNamespace},
		{fakecri.LabelPodUID, labelPodUID},
	} {
		if k.fake != k.ours {
			t.Errorf("fakecri uses the label %q where this package reads %q", k.fake, k.ours)
		}
	}
}
