package cri

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/collector"
	"github.com/schedstatd/schedstatd/internal/testkit/containerdtest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// realNode is a real containerd running a burstable and a guaranteed pod,
// each with one container, and a Client of it.
type realNode struct {
	ctd         *containerdtest.Containerd
	batch, shop *containerdtest.Pod
	crunch, web *containerdtest.Container
	client      *Client
	logs        *logBuffer
}

// spinImage is an image besides containerdtest.BusyboxImage, with its own
// id (its entrypoint differs).
var spinImage = containerdtest.Image{Name: "registry.schedstatd.test/tools/spin:2", Entrypoint: []string{containerdtest.Busybox, "sh"}}

// startRealNode starts the node, and a Client of cfg (its Endpoint set)
// of it.
func startRealNode(t *testing.T, cfg Config) *realNode {
	t.Helper()
	n := &realNode{ctd: containerdtest.Start(t, spinImage)}
	n.batch = n.ctd.RunPod("report-28190415-x7k2p", "batch", containerdtest.Burstable)
	n.shop = n.ctd.RunPod("web-0", "shop", containerdtest.Guaranteed)
	n.crunch = n.ctd.StartContainer(n.batch, "crunch", containerdtest.BusyboxImage.Name, "/bin/sh", "-c", "sleep 600")
	n.web = n.ctd.StartContainer(n.shop, "web", spinImage.Name, "/bin/sh", "-c", "sleep 600")
	cfg.Endpoint = "unix://" + n.ctd.Socket
	n.logs = &logBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(n.logs, nil))
	client, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	n.client = client
	return n
}

// want returns the labels each of the node's cgroups must get, by id.
func (n *realNode) want() map[string]collector.ContainerLabels {
	m := map[string]collector.ContainerLabels{
		n.ctd.CgroupRoot + "/kubepods":           {},
		n.ctd.CgroupRoot + "/kubepods/burstable": {},
	}
	for _, p := range []*containerdtest.Pod{n.batch, n.shop} {
		m[p.CgroupID()] = collector.ContainerLabels{Pod: p.Name, Namespace: p.Namespace}
		// The sandbox (pause) container's image, from containerd's
		// verbose Status (its sandbox_image), as cAdvisor shows it.
		m[p.SandboxCgroupID()] = collector.ContainerLabels{Pod: p.Name, Namespace: p.Namespace, Image: containerdtest.PauseImage.Name}
	}
	for _, c := range []*containerdtest.Container{n.crunch, n.web} {
		m[c.CgroupID()] = collector.ContainerLabels{Container: c.Name, Pod: c.Pod.Name, Namespace: c.Pod.Namespace, Image: c.Image}
	}
	return m
}

// labels returns the Client's labels of each cgroup id of want, each
// parsed from its path as the daemon parses it.
func (n *realNode) labels(want map[string]collector.ContainerLabels) map[string]collector.ContainerLabels {
	got := map[string]collector.ContainerLabels{}
	for id := range want {
		got[id] = n.client.Labels(cgroupfs.ParseIdentity(id))
	}
	return got
}

// awaitLabels waits until the Client is up and labels the node's cgroups
// as want says.
func (n *realNode) awaitLabels(t *testing.T, want map[string]collector.ContainerLabels) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := n.labels(want)
		diff := cmp.Diff(want, got)
		if n.client.Up() && diff == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within 20s: up %v, labels (-want +got):\n%s", n.client.Up(), diff)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestContainerdLabels names the cgroups of pods that a real containerd
// runs, parsed from their real paths: containerd 1.6 lists a container's
// image by id only, so the names come from ListImages.
func TestContainerdLabels(t *testing.T) {
	n := startRealNode(t, Config{Interval: time.Hour, MinGap: 10 * time.Millisecond})
	n.awaitLabels(t, n.want())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := n.ctd.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.GetContainers() {
		if !needsImageList(c) {
			t.Errorf("container %s names its image %+v: this containerd keeps the user-specified image; the ListImages path is not what names it", c.GetMetadata().GetName(), c.GetImage())
		}
	}
}

// TestContainerdExitedContainerKeepsName checks that a container that has
// exited, which containerd lists until kubelet removes it, keeps its
// names, and that one removed (with its pod) is no longer known.
func TestContainerdExitedContainerKeepsName(t *testing.T) {
	n := startRealNode(t, Config{Interval: 50 * time.Millisecond, MinGap: 10 * time.Millisecond, RetryAfter: 10 * time.Millisecond})
	done := n.ctd.StartContainer(n.batch, "migrate", containerdtest.BusyboxImage.Name, "/bin/sh", "-c", "exit 3")
	if code := n.ctd.WaitExited(done, 30*time.Second); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	want := n.want()
	want[done.CgroupID()] = collector.ContainerLabels{Container: "migrate", Pod: n.batch.Name, Namespace: n.batch.Namespace, Image: done.Image}
	n.awaitLabels(t, want)

	n.ctd.RemovePod(n.shop)
	delete(want, n.shop.CgroupID())
	delete(want, n.shop.SandboxCgroupID())
	delete(want, n.web.CgroupID())
	gone := map[string]collector.ContainerLabels{n.shop.CgroupID(): {}, n.shop.SandboxCgroupID(): {}, n.web.CgroupID(): {}}
	for id, l := range want {
		gone[id] = l
	}
	n.awaitLabels(t, gone)
}

// TestContainerdNewContainerLabelledOnNextMiss starts a container after
// the Client's first refresh, with no periodic refresh to help (the
// interval is an hour): the first lookup of its cgroup gets what its pod
// uid tells and asks for a refresh, and the names follow soon after.
func TestContainerdNewContainerLabelledOnNextMiss(t *testing.T) {
	n := startRealNode(t, Config{Interval: time.Hour, MinGap: 50 * time.Millisecond})
	n.awaitLabels(t, n.want())
	before := n.client.refreshes.Load()

	late := n.ctd.StartContainer(n.shop, "worker", containerdtest.BusyboxImage.Name, "/bin/sh", "-c", "sleep 600")
	id := cgroupfs.ParseIdentity(late.CgroupID())
	full := collector.ContainerLabels{Container: "worker", Pod: n.shop.Name, Namespace: n.shop.Namespace, Image: late.Image}
	// A refresh already under way when the container started may have
	// named it; otherwise the first lookup knows only its pod.
	if got := n.client.Labels(id); got != full {
		if diff := cmp.Diff(collector.ContainerLabels{Pod: n.shop.Name, Namespace: n.shop.Namespace}, got); diff != "" {
			t.Errorf("the first lookup (-want +got):\n%s", diff)
		}
	}
	want := n.want()
	want[late.CgroupID()] = full
	start := time.Now()
	n.awaitLabels(t, want)
	t.Logf("labelled %v after its first lookup", time.Since(start).Round(time.Millisecond))
	if after := n.client.refreshes.Load(); after <= before {
		t.Errorf("refreshes %d -> %d: the new name came without a refresh", before, after)
	}
}

// TestContainerdRestart stops containerd under a running Client and
// starts it again: the Client goes down with one line logged however many
// refreshes fail, keeps every name meanwhile, gives a container cgroup new
// meanwhile only its pod's names, and comes back up with one more line
// and the names, containers and pods that ran on through the restart
// included.
func TestContainerdRestart(t *testing.T) {
	n := startRealNode(t, Config{Interval: 50 * time.Millisecond, MinGap: 10 * time.Millisecond, RetryAfter: 10 * time.Millisecond, CallTimeout: 500 * time.Millisecond})
	want := n.want()
	n.awaitLabels(t, want)

	n.ctd.Stop()
	for deadline := time.Now().Add(10 * time.Second); n.client.Up() || n.client.failures.Load() < 5; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("10s after containerd stopped: up %v, %d failed refreshes", n.client.Up(), n.client.failures.Load())
		}
	}
	if diff := cmp.Diff(want, n.labels(want)); diff != "" {
		t.Errorf("labels while containerd is down (-want +got):\n%s", diff)
	}
	// The cgroup of a container runc would have started meanwhile.
	unknown := cgroupfs.ParseIdentity(n.batch.CgroupID() + "/" + strings.Repeat("ab", 32))
	if diff := cmp.Diff(collector.ContainerLabels{Pod: n.batch.Name, Namespace: n.batch.Namespace}, n.client.Labels(unknown)); diff != "" {
		t.Errorf("a container new while containerd is down, in a known pod (-want +got):\n%s", diff)
	}
	if c := n.logs.count("container runtime unavailable"); c != 1 {
		t.Errorf("%d lines say the runtime is unavailable, want 1:\n%s", c, n.logs)
	}

	n.ctd.Restart()
	n.awaitLabels(t, want)
	// The names were kept while it was down, so they may be whole
	// before the Client is up again: wait for the line, then count.
	for deadline := time.Now().Add(10 * time.Second); (!n.client.Up() || n.logs.count("container runtime answers") < 2) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if c := n.logs.count("container runtime answers"); c != 2 {
		t.Errorf("%d lines say the runtime answers, want 2 (start and after the restart):\n%s", c, n.logs)
	}
	// The containers ran on in their shims, and containerd knows them.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := n.ctd.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.GetContainers() {
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("container %s is %v after the restart", c.GetMetadata().GetName(), c.GetState())
		}
	}
}
