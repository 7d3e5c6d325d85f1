package cri

import (
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
)

// Notice looks through the cgroups of a pass's snapshot for containers and
// pods the cache does not know, and asks for a refresh for them as a
// scrape's miss would (at most one per MinGap, each id at most once per
// RetryAfter). Called after every background pass, it names a new
// container before the first scrape meets its cgroup, so even that scrape
// is labelled. Each path is parsed once while the cache knows it; the set
// of paths seen is rebuilt when cgroups have gone. One goroutine at a time
// may call it; a nil Client does nothing.
func (c *Client) Notice(s *container.Snapshot) {
	if c == nil || s == nil {
		return
	}
	c.noticeMu.Lock()
	defer c.noticeMu.Unlock()
	if c.seen == nil || len(c.seen) > 2*len(s.Cgroups)+64 {
		c.seen = make(map[string]struct{}, len(s.Cgroups))
	}
	cur := c.cache.Load()
	for i := range s.Cgroups {
		path := s.Cgroups[i].Path
		if _, ok := c.seen[path]; ok {
			continue
		}
		id := cgroupfs.ParseIdentity(path)
		var k key
		switch {
		case id.ContainerID != "":
			k = key{id: id.ContainerID}
		case id.PodUID != "":
			k = key{id: id.PodUID, pod: true}
		default:
			c.seen[path] = struct{}{} // no runtime names it
			continue
		}
		if cur.has(k) {
			c.seen[path] = struct{}{}
			continue
		}
		c.miss(k)
	}
}
