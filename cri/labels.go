package cri

import (
	"strings"
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/collector"
)

// key is what Labels looks up: a container (or sandbox) id, or a pod uid.
type key struct {
	id  string
	pod bool
}

// Labels returns the Kubernetes names of the cgroup id names, from memory:
// container, pod, namespace and image for a container's own cgroup; pod
// and namespace for a pod's cgroup, its sandbox (pause) container, a
// runtime's monitor (conmon) of one of its containers, and cgroups nested
// below a container's own. The last three get no container name so that
// sums over container!="" count each container once. Labels never blocks;
// an id it does not know asks the refresher for a refresh and gets what the
// pod uid alone tells, often nothing. It may be called from any goroutine.
func (c *Client) Labels(id cgroupfs.Identity) collector.ContainerLabels {
	s := c.cache.Load()
	if id.ContainerID != "" {
		if l, ok := s.containers[id.ContainerID]; ok {
			if id.Monitor || !ownCgroup(id) {
				return collector.ContainerLabels{Pod: l.Pod, Namespace: l.Namespace}
			}
			return l
		}
		if l, ok := s.sandboxes[id.ContainerID]; ok {
			return l
		}
		c.miss(key{id: id.ContainerID})
	}
	if id.PodUID == "" {
		return collector.ContainerLabels{}
	}
	l, ok := s.pods[id.PodUID]
	if !ok && id.ContainerID == "" {
		c.miss(key{id: id.PodUID, pod: true})
	}
	return l
}

// ownCgroup reports whether id is the cgroup that carries its container id
// in its own name, rather than one nested below it.
func ownCgroup(id cgroupfs.Identity) bool {
	return strings.Contains(id.ID[strings.LastIndexByte(id.ID, '/')+1:], id.ContainerID)
}

// miss records that Labels met k and the cache lacks it, and wakes the
// refresher unless a refresh already looked for k in the current
// RetryAfter window.
func (c *Client) miss(k key) {
	now := time.Now()
	c.mu.Lock()
	c.rotateAbsent(now)
	_, absent := c.absent[k]
	_, asking := c.asking[k]
	if absent || asking {
		c.mu.Unlock()
		return
	}
	_, asked := c.pending[k]
	if !asked {
		c.pending[k] = struct{}{}
	}
	c.mu.Unlock()
	if !asked {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// rotateAbsent forgets the ids refreshes did not find once the window they
// were found missing in is RetryAfter old. All are asked for again
// together, so ids that never resolve cost one refresh per RetryAfter in
// all, and the set holds only the ids of one window. c.mu must be held.
func (c *Client) rotateAbsent(now time.Time) {
	if now.Sub(c.absentAt) < c.cfg.RetryAfter {
		return
	}
	if len(c.absent) > 0 {
		// A new map, since a map never shrinks.
		c.absent = make(map[key]struct{})
	}
	c.absentAt = now
}
