package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/schedstatd/schedstatd/internal/testkit/containerdtest"
)

// startContainerdNode starts a containerd, the daemon with its default collect
// interval, as it ships, and then a burstable pod, so the daemon sees all
// of the pod's life.
func startContainerdNode(t *testing.T) (*containerdtest.Containerd, *containerdtest.Pod, *ctdScraper) {
	c := containerdtest.Start(t)
	s := &ctdScraper{t: t, client: &http.Client{Timeout: 10 * time.Second}, root: c.CgroupRoot}
	s.d = startDaemon(t, "--container-runtime-endpoint=unix://"+c.Socket)
	s.url = "http://" + s.d.addr + "/metrics"
	pod := c.RunPod("burst-0", "batch", containerdtest.Burstable)
	s.await("the pod labelled", 20*time.Second, func(mfs map[string]*dto.MetricFamily) string {
		if l := seriesLabels(mfs, "container_schedstat_tasks", pod.CgroupID()); l["pod"] != pod.Name {
			return fmt.Sprintf("pod cgroup labels %v", l)
		}
		return ""
	})
	return c, pod, s
}

// TestContainerdFirstScrapeLabelled starts a container and scrapes
// only 3 s later, as Prometheus would at a 15 s or 30 s interval: that
// first scrape must name the container: the runtime is asked after each
// background pass that finds a new id.
func TestContainerdFirstScrapeLabelled(t *testing.T) {
	c, pod, s := startContainerdNode(t)
	ctr := c.StartContainer(pod, "crunch", containerdtest.BusyboxImage.Name, "/bin/sh", "-c", "sleep 600")
	time.Sleep(3 * time.Second)
	mfs := s.scrape()
	if got := seriesLabels(mfs, "container_schedstat_tasks", ctr.CgroupID()); got["container"] != ctr.Name || got["image"] != ctr.Image {
		t.Errorf("the first scrape, 3 s after the container started: labels %v, want %v", got, containerLabels(ctr))
	}
}

// TestContainerdSandboxImage checks that a pod's sandbox cgroup has the
// sandbox image as its image label, as cAdvisor shows it.
func TestContainerdSandboxImage(t *testing.T) {
	_, pod, s := startContainerdNode(t)
	s.await("the sandbox's image label", 10*time.Second, func(mfs map[string]*dto.MetricFamily) string {
		if got := seriesLabels(mfs, "container_schedstat_tasks", pod.SandboxCgroupID())["image"]; got != containerdtest.PauseImage.Name {
			return fmt.Sprintf("image label %q, want %q", got, containerdtest.PauseImage.Name)
		}
		return ""
	})
}
