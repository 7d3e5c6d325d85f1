//go:build kubelet

// The test in this file runs a real kubelet, built from test/kubelet (a
// module of its own: a cold build downloads and compiles k8s.io/kubernetes
// for minutes), so it is left out of `make test`; `make test-kubelet`
// runs it.

package main

import (
	"net/http"
	"os"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/schedstatd/schedstatd/internal/testkit/containerdtest"
)

// Static pods of TestKubeletStaticPods: a burstable one that spins, a
// guaranteed one that sleeps.
const (
	reportManifest = `apiVersion: v1
kind: Pod
metadata:
  name: report
  namespace: batch
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: crunch
    image: localhost/schedstatd/busybox:1.35
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "while :; do :; done"]
    resources:
      requests:
        cpu: 10m
`
	webManifest = `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: registry.schedstatd.test/tools/spin:2
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "sleep 600"]
    resources:
      requests:
        cpu: 100m
        memory: 64Mi
      limits:
        cpu: 100m
        memory: 64Mi
`
)

// TestKubeletStaticPods runs a real kubelet in standalone mode over a real
// containerd, with the cgroupfs driver and the test's own cgroup root, and
// two static pods, one burstable and one guaranteed. It checks that the
// kubelet made kubelet's cgroup shapes (<root>/kubepods/burstable/pod<uid>
// and <root>/kubepods/pod<uid>) and that the daemon gives the pods' and
// containers' cgroups their exact label sets: the names the kubelet gave
// the runtime (a static pod's name ends with the node's name).
func TestKubeletStaticPods(t *testing.T) {
	bin := containerdtest.BuildKubelet(t)
	c := containerdtest.Start(t, spinImage)
	k := containerdtest.StartKubelet(t, c, bin)
	k.AddStaticPod("report", reportManifest)
	k.AddStaticPod("web", webManifest)
	batch, batchCtrs := k.WaitPod("batch", "report-"+k.NodeName, containerdtest.Burstable, 1, 60*time.Second)
	shop, shopCtrs := k.WaitPod("shop", "web-"+k.NodeName, containerdtest.Guaranteed, 1, 60*time.Second)
	crunch, web := batchCtrs[0], shopCtrs[0]
	crunch.Image, web.Image = containerdtest.BusyboxImage.Name, spinImage.Name

	for _, id := range []string{crunch.CgroupID(), batch.SandboxCgroupID(), web.CgroupID(), shop.SandboxCgroupID()} {
		if _, err := os.Stat(containerdtest.CgroupDir("cpuacct", id)); err != nil {
			t.Errorf("the kubelet's cgroup %s: %v", id, err)
		}
	}

	s := &ctdScraper{t: t, client: &http.Client{Timeout: 10 * time.Second}, root: c.CgroupRoot}
	s.d = startDaemon(t, "--collect.interval=200ms", "--container-runtime-endpoint=unix://"+c.Socket)
	s.url = "http://" + s.d.addr + "/metrics"
	want := map[string]map[string]string{
		c.CgroupRoot + "/kubepods":            plainLabels(c.CgroupRoot + "/kubepods"),
		c.CgroupRoot + "/kubepods/burstable":  plainLabels(c.CgroupRoot + "/kubepods/burstable"),
		c.CgroupRoot + "/kubepods/besteffort": plainLabels(c.CgroupRoot + "/kubepods/besteffort"),
		batch.CgroupID():                      podLabels(batch),
		batch.SandboxCgroupID():               sandboxLabels(batch),
		crunch.CgroupID():                     containerLabels(crunch),
		shop.CgroupID():                       podLabels(shop),
		shop.SandboxCgroupID():                sandboxLabels(shop),
		web.CgroupID():                        containerLabels(web),
	}
	mfs := s.await("every cgroup labelled", 20*time.Second, func(mfs map[string]*dto.MetricFamily) string {
		if why := runtimeUp(1)(mfs); why != "" {
			return why
		}
		return labelDiff(mfs, want)
	})
	if n, _ := value(mfs, "container_schedstat_tasks", crunch.CgroupID()); n < 1 {
		t.Errorf("%s: %v tasks", crunch.Name, n)
	}
	t.Logf("pods %s/%s (uid %s) and %s/%s (uid %s) labelled", batch.Namespace, batch.Name, batch.UID, shop.Namespace, shop.Name, shop.UID)
}
