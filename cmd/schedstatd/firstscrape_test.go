package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/fakecri"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// TestNewContainerLabelledOnFirstScrape starts a container between two
// scrapes, as a runtime does: its cgroup appears (here in the shape
// kubelet's systemd driver asks a cgroupfs containerd for), and the CRI
// runtime lists it. Nothing scrapes until 10 s later, under the shortest
// usual scrape interval: that first scrape must carry its names, learnt
// after the background passes met its cgroup. The pod's sandbox cgroup
// carries the sandbox image.
func TestNewContainerLabelledOnFirstScrape(t *testing.T) {
	e2e.RequireRoot(t)
	root := testcg.Make(t, testcg.Default())
	base := "/" + filepath.Base(root)
	uid, sandbox, id := randomUID(t), randomHex(t, 32), randomHex(t, 32)
	rt := fakecri.New()
	rt.SetSandboxImage("registry.k8s.io/pause:3.9")
	rt.AddPod(sandbox, uid, "worker-0", "jobs")
	sandboxID := base + "/kubepods/burstable/pod" + uid + "/" + sandbox
	if err := os.MkdirAll(filepath.Join(filepath.Dir(root), sandboxID), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := fakecri.Start(t, rt)
	d := startDaemon(t, "--collect.interval=200ms", "--container-runtime-endpoint="+srv.Endpoint())
	// The daemon is up; no scrape yet.
	if resp, err := http.Get("http://" + d.addr + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", resp, err)
	}

	ctr := base + "/kubepods-burstable-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice:cri-containerd:" + id
	dir := filepath.Join(filepath.Dir(root), ctr)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	testproc.StartIn(t, 1, dir)
	rt.AddContainer(id, sandbox, uid, "worker", "worker-0", "jobs", "busybox:1.36")
	time.Sleep(10 * time.Second)

	mfs := scrape(t, http.DefaultClient, "http://"+d.addr+"/metrics")
	got := seriesLabels(mfs, "container_schedstat_tasks", ctr)
	for k, want := range map[string]string{"container": "worker", "pod": "worker-0", "namespace": "jobs", "image": "docker.io/library/busybox:1.36", "name": id} {
		if got[k] != want {
			t.Errorf("first scrape of the new container: %s=%q, want %q (labels %v)", k, got[k], want, got)
		}
	}
	if img := seriesLabels(mfs, "container_schedstat_tasks", sandboxID)["image"]; img != "registry.k8s.io/pause:3.9" {
		t.Errorf("sandbox cgroup: image=%q, want the sandbox image", img)
	}
}

// randomUID returns a random pod uid, as the API server makes them.
func randomUID(t *testing.T) string {
	h := randomHex(t, 16)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
