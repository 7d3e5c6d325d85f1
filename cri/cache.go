package cri

import (
	"github.com/schedstatd/schedstatd/collector"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Container labels kubelet puts on every container it asks the runtime to
// create.
const (
	labelContainerName = "io.kubernetes.container.name"
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
)

// cache is what one successful refresh learnt. It is never modified after
// it is published, so Labels reads it without a lock.
type cache struct {
	// containers maps a container id to its container, pod, namespace and
	// image names.
	containers map[string]collector.ContainerLabels
	// sandboxes maps a pod sandbox id (the id of the pause container's
	// cgroup) to its pod and namespace.
	sandboxes map[string]collector.ContainerLabels
	// pods maps a pod uid, with dashes, to its pod and namespace.
	pods map[string]collector.ContainerLabels
}

var emptyCache = &cache{}

// has reports whether k is in the cache.
func (c *cache) has(k key) bool {
	if k.pod {
		_, ok := c.pods[k.id]
		return ok
	}
	_, ok := c.containers[k.id]
	if !ok {
		_, ok = c.sandboxes[k.id]
	}
	return ok
}

// build makes the cache of one refresh's lists. tags maps image ids to
// names, for containers that name their image by id only; sandboxImage is
// the image label of sandbox (pause) containers' cgroups.
func build(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container, tags map[string]string, sandboxImage string) *cache {
	c := &cache{
		containers: make(map[string]collector.ContainerLabels, len(containers)),
		sandboxes:  make(map[string]collector.ContainerLabels, len(sandboxes)),
		pods:       make(map[string]collector.ContainerLabels, len(sandboxes)),
	}
	for _, s := range sandboxes {
		m := s.GetMetadata()
		l := collector.ContainerLabels{Pod: m.GetName(), Namespace: m.GetNamespace()}
		if s.GetId() != "" {
			c.sandboxes[s.GetId()] = collector.ContainerLabels{Pod: l.Pod, Namespace: l.Namespace, Image: sandboxImage}
		}
		if m.GetUid() != "" {
			c.pods[m.GetUid()] = l
		}
	}
	for _, ctr := range containers {
		if ctr.GetId() == "" {
			continue
		}
		pod := c.sandboxes[ctr.GetPodSandboxId()]
		labels := ctr.GetLabels()
		l := collector.ContainerLabels{
			Container: first(labels[labelContainerName], ctr.GetMetadata().GetName()),
			Pod:       first(labels[labelPodName], pod.Pod),
			Namespace: first(labels[labelPodNamespace], pod.Namespace),
			Image:     imageName(ctr, tags),
		}
		c.containers[ctr.GetId()] = l
		// A sandbox that is already gone still leaves its pod's name on
		// the containers that ran in it.
		if uid := labels[labelPodUID]; uid != "" && l.Pod != "" {
			if _, ok := c.pods[uid]; !ok {
				c.pods[uid] = collector.ContainerLabels{Pod: l.Pod, Namespace: l.Namespace}
			}
		}
	}
	return c
}

// first returns the first of a and b that is not empty.
func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
