package collector

import (
	"regexp"
	"strings"
	"sync"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
)

// Selection picks the cgroups whose series are served, to bound the
// series of a node with many cgroups. A cgroup is selected when its id
// (the path, "/" for the root) matches one of Include (or Include is
// empty), matches none of Exclude, and its depth is at most MaxDepth.
// Patterns are RE2 regular expressions matched against the whole path, as
// Prometheus relabelling anchors them: "/kubepods.*" selects the kubepods
// subtree, "/system\.slice" only that cgroup, "/system\.slice(/.*)?"
// it and its descendants. Depth counts path elements: 0 for "/", 1 for
// "/kubepods.slice". Selection only drops series: every cgroup's series
// include all its descendants, selected or not, so an excluded subtree's
// time still counts in the ancestors that are served.
type Selection struct {
	Include, Exclude []*regexp.Regexp
	// MaxDepth is the deepest level served; negative for no limit.
	MaxDepth int
}

// Selected reports whether the series of the cgroup at path are served.
// A nil Selection selects every cgroup.
func (s *Selection) Selected(path string) bool {
	if s == nil {
		return true
	}
	if s.MaxDepth >= 0 && Depth(path) > s.MaxDepth {
		return false
	}
	for _, re := range s.Exclude {
		if re.MatchString(path) {
			return false
		}
	}
	if len(s.Include) == 0 {
		return true
	}
	for _, re := range s.Include {
		if re.MatchString(path) {
			return true
		}
	}
	return false
}

// Depth returns the depth of a cgroup path: 0 for "/", one more for each
// element below it.
func Depth(path string) int {
	if path == "/" || path == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(path, "/"), "/")
}

// CompileSelection compiles the patterns of a Selection, each anchored at
// both ends. An error names the pattern that does not compile.
func CompileSelection(include, exclude []string, maxDepth int) (*Selection, error) {
	s := &Selection{MaxDepth: maxDepth}
	for _, p := range include {
		re, err := regexp.Compile("^(?:" + p + ")$")
		if err != nil {
			return nil, err
		}
		s.Include = append(s.Include, re)
	}
	for _, p := range exclude {
		re, err := regexp.Compile("^(?:" + p + ")$")
		if err != nil {
			return nil, err
		}
		s.Exclude = append(s.Exclude, re)
	}
	return s, nil
}

// cgroupLabels are the label values of one cgroup's series, built once
// per cgroup and kept while the cgroup is in the snapshots: the id and
// name label values (made valid UTF-8), what the path says of it, whether
// it is selected, and the whole label set as the text formats write it.
// An entry is never changed once published; a change of the runtime's
// labels makes a new one.
type cgroupLabels struct {
	identity cgroupfs.Identity
	// id and name are the id and name label values.
	id, name string
	k        ContainerLabels
	selected bool
	// values are the label values in containerLabels' order.
	values []string
	// text is `{container="...",id="...",...}`, names in sorted order and
	// values escaped, as the text and OpenMetrics formats write them.
	text string
	seen uint64 // the last render that used it; under labelCache.mu
}

// newLabels builds the labels of the cgroup at path.
func newLabels(path string, sel *Selection) *cgroupLabels {
	id := cgroupfs.ParseIdentity(path)
	// A cgroup name is any bytes; a label value must be UTF-8.
	l := &cgroupLabels{identity: id, id: cgroupfs.LabelValue(id.ID), name: cgroupfs.LabelValue(id.Name), selected: sel.Selected(path)}
	l.build()
	return l
}

// with returns a copy of l with the runtime's labels k.
func (l *cgroupLabels) with(k ContainerLabels) *cgroupLabels {
	n := &cgroupLabels{identity: l.identity, id: l.id, name: l.name, k: k, selected: l.selected}
	n.build()
	return n
}

// build fills values and text from identity and k.
func (l *cgroupLabels) build() {
	l.values = []string{l.id, l.name, l.k.Container, l.k.Pod, l.k.Namespace, l.k.Image}
	var b []byte
	b = append(b, '{')
	for i, kv := range [...][2]string{
		{"container", l.k.Container}, {"id", l.id}, {"image", l.k.Image},
		{"name", l.name}, {"namespace", l.k.Namespace}, {"pod", l.k.Pod},
	} {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, kv[0]...)
		b = append(b, '=', '"')
		b = appendEscaped(b, kv[1])
		b = append(b, '"')
	}
	b = append(b, '}')
	l.text = string(b)
}

// labelCache holds the labels of the cgroups of the latest snapshots,
// keyed by path. Renders may run at once; mu guards the map.
type labelCache struct {
	mu     sync.Mutex
	byPath map[string]*cgroupLabels
	render uint64
	peak   int
}

// resolve returns the labels of every cgroup of s, in its order, asking
// labeler (if any) for the runtime's labels of each. Entries of cgroups
// no longer in s are dropped, and the map rebuilt once it has shrunk to a
// quarter of its peak, so memory follows the cgroups of the node.
func (c *labelCache) resolve(s *container.Snapshot, labeler Labeler, sel *Selection) []*cgroupLabels {
	out := make([]*cgroupLabels, len(s.Cgroups))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byPath == nil {
		c.byPath = make(map[string]*cgroupLabels, len(s.Cgroups))
	}
	c.render++
	for i := range s.Cgroups {
		path := s.Cgroups[i].Path
		l := c.byPath[path]
		if l == nil {
			l = newLabels(path, sel)
			c.byPath[path] = l
		}
		if labeler != nil {
			if k := labeler.Labels(l.identity); k != l.k {
				l = l.with(k)
				c.byPath[path] = l
			}
		}
		l.seen = c.render
		out[i] = l
	}
	c.peak = max(c.peak, len(c.byPath))
	if len(c.byPath) > len(s.Cgroups) {
		for path, l := range c.byPath {
			if l.seen != c.render {
				delete(c.byPath, path)
			}
		}
	}
	if c.peak > 1024 && len(c.byPath)*4 < c.peak {
		m := make(map[string]*cgroupLabels, len(c.byPath))
		for path, l := range c.byPath {
			m[path] = l
		}
		c.byPath, c.peak = m, len(m)
	}
	return out
}

// selected returns how many cgroups of s sel selects, from the cached
// labels where there are some.
func (c *labelCache) selected(s *container.Snapshot, sel *Selection) int {
	if sel == nil {
		return len(s.Cgroups)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for i := range s.Cgroups {
		if l := c.byPath[s.Cgroups[i].Path]; l != nil && l.selected || l == nil && sel.Selected(s.Cgroups[i].Path) {
			n++
		}
	}
	return n
}
