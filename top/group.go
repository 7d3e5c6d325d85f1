package top

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/schedstatd/schedstatd/cgroupfs"
)

// View is what a row stands for.
type View int

// Views. ViewAuto shows containers when they do most of the node's work,
// else cgroups (see Resolve).
const (
	ViewAuto View = iota
	ViewContainers
	ViewPods
	ViewCgroups
	// ViewProcesses and ViewThreads are drilled down into from a row of
	// the others (Target); --view does not take them.
	ViewProcesses
	ViewThreads
)

var viewNames = []string{"auto", "containers", "pods", "cgroups", "processes", "threads"}

// selectable is how many of viewNames --view takes.
const selectable = 4

func (v View) String() string {
	if v < 0 || int(v) >= len(viewNames) {
		return fmt.Sprintf("View(%d)", int(v))
	}
	return viewNames[v]
}

// ParseView returns the view named s, as String names it.
func ParseView(s string) (View, error) {
	if i := slices.Index(viewNames[:selectable], s); i >= 0 {
		return View(i), nil
	}
	return 0, fmt.Errorf("unknown view %q (want one of %s)", s, strings.Join(viewNames[:selectable], ", "))
}

// ViewNames returns the names ParseView takes.
func ViewNames() []string { return slices.Clone(viewNames[:selectable]) }

// Next returns the view the p key switches to: containers, pods, cgroups,
// and round again.
func (v View) Next() View {
	switch v {
	case ViewContainers:
		return ViewPods
	case ViewPods:
		return ViewCgroups
	default:
		return ViewContainers
	}
}

// containerShare is the least share of the node's run and wait time its
// containers must have for the automatic view to show containers.
const containerShare = 0.5

// Resolve returns v, or for ViewAuto, ViewContainers when containers run
// and wait at least half of what the whole node does (by the rates of
// rows, which must include the root's), and ViewCgroups otherwise: an idle
// container on a node of busy services hides nothing. Without rates (a
// first sample) or without work on the node, it is ViewCgroups, which
// shows everything.
func (v View) Resolve(rows []Row) View {
	if v != ViewAuto {
		return v
	}
	root, ok := Root(rows)
	if !ok || !root.Known || root.Run+root.Wait <= 0 {
		return ViewCgroups
	}
	// A container's cgroup includes those nested in it: count each
	// container once, by its busiest (outermost) cgroup.
	busiest := map[string]float64{}
	for _, r := range rows {
		if k, _, _, ok := containerKey(r); ok && r.Known {
			busiest[k] = max(busiest[k], r.Run+r.Wait)
		}
	}
	var sum float64
	for _, b := range busiest {
		sum += b
	}
	if sum >= containerShare*(root.Run+root.Wait) {
		return ViewContainers
	}
	return ViewCgroups
}

// Root returns the row of the root cgroup "/", the whole node, if rows
// (from Rates) have it.
func Root(rows []Row) (Row, bool) {
	for _, r := range rows {
		if len(r.IDs) == 1 && r.IDs[0] == "/" {
			return r, true
		}
	}
	return Row{}, false
}

// Group returns the rows of view v made from cgroup rows as Rates returns
// them. ViewCgroups keeps every cgroup but the root, which Root gives.
// ViewContainers and ViewPods make one row per container or pod, known by
// the path's container id or pod uid, else by the daemon's labels; a
// cgroup that is neither is left out. Since a cgroup's counters include
// its descendants, a row sums only those of its cgroups that have no
// ancestor in the same row.
func Group(rows []Row, v View) []Row {
	v = v.Resolve(rows)
	if v == ViewProcesses || v == ViewThreads {
		return rows
	}
	if v == ViewCgroups {
		out := make([]Row, 0, len(rows))
		for _, r := range rows {
			if len(r.IDs) == 1 && r.IDs[0] == "/" {
				continue
			}
			out = append(out, r)
		}
		return out
	}
	key := containerKey
	if v == ViewPods {
		key = podKey
	}
	groups := map[string][]Row{}
	labels := map[string]string{}
	named := map[string]bool{}
	for _, r := range rows {
		k, label, fromNames, ok := key(r)
		if !ok {
			continue
		}
		groups[k] = append(groups[k], r)
		// Kubernetes names beat an id, whichever cgroup carries them.
		if _, seen := labels[k]; !seen || fromNames && !named[k] {
			labels[k], named[k] = label, fromNames
		}
	}
	out := make([]Row, 0, len(groups))
	for k, members := range groups {
		out = append(out, merge(labels[k], members, v))
	}
	return out
}

// merge sums the members that have no ancestor among them into a row of
// view v. A pod row names no container: its members are several.
func merge(label string, members []Row, v View) Row {
	ids := make(map[string]bool, len(members))
	for _, m := range members {
		ids[m.IDs[0]] = true
	}
	slices.SortFunc(members, func(a, b Row) int {
		return cmp.Or(cmp.Compare(len(a.IDs[0]), len(b.IDs[0])), strings.Compare(a.IDs[0], b.IDs[0]))
	})
	g := Row{Label: label, Known: true}
	// A quota throttles only its own cgroup's run queues: a pod's row
	// takes the pod cgroup's throttled time or its containers', summed,
	// whichever is larger (either is wait the limits explain).
	var inner float64
	var hasInner bool
	for _, m := range members {
		if m.MainPreemptor.PerSecond > g.MainPreemptor.PerSecond {
			g.MainPreemptor = m.MainPreemptor
		}
		if v == ViewContainers {
			g.Container = cmp.Or(g.Container, m.Container)
		}
		g.Pod = cmp.Or(g.Pod, m.Pod)
		g.Namespace = cmp.Or(g.Namespace, m.Namespace)
		if hasAncestor(m.IDs[0], ids) {
			if m.HasThrottled {
				inner, hasInner = inner+m.Throttled, true
			}
			continue
		}
		g.IDs = append(g.IDs, m.IDs[0])
		g.Run += m.Run
		g.Wait += m.Wait
		g.Timeslices += m.Timeslices
		g.Tasks += m.Tasks
		g.Known = g.Known && m.Known
		if m.WaitHist != nil {
			g.WaitHist = addHist(g.WaitHist, m.WaitHist)
		}
		if m.HasThrottled {
			g.Throttled, g.HasThrottled = g.Throttled+m.Throttled, true
		}
		if m.HasPressure {
			g.Pressure, g.HasPressure = g.Pressure+m.Pressure, true
		}
	}
	if hasInner {
		g.Throttled, g.HasThrottled = max(g.Throttled, inner), true
	}
	if !g.Known {
		g.Run, g.Wait, g.Timeslices = 0, 0, 0
		g.Throttled, g.Pressure = 0, 0
	}
	return g
}

// hasAncestor reports whether a proper ancestor of the cgroup path id is
// in ids.
func hasAncestor(id string, ids map[string]bool) bool {
	for p := path.Dir(id); ; p = path.Dir(p) {
		if ids[p] {
			return true
		}
		if p == "/" || p == "." {
			return false
		}
	}
}

// containerKey returns the key and label of the container r belongs to,
// and whether the label is made of Kubernetes names.
func containerKey(r Row) (key, label string, named, ok bool) {
	id := cgroupfs.ParseIdentity(r.IDs[0])
	if id.Monitor {
		return "", "", false, false
	}
	label, named = joinNames(r.Namespace, r.Pod, r.Container), r.Container != ""
	switch {
	case id.ContainerID != "":
		if !named {
			// A pod's sandbox (pause) container, or one the runtime has not
			// named yet: its short id, in its pod where that is known.
			label = joinNames(r.Namespace, r.Pod, shortID(id.ContainerID))
		}
		return "id:" + id.ContainerID, label, named, true
	case named:
		return "k8s:" + label, label, true, true
	}
	return "", "", false, false
}

// podKey returns the key and label of the pod r belongs to, and whether
// the label is made of Kubernetes names.
func podKey(r Row) (key, label string, named, ok bool) {
	id := cgroupfs.ParseIdentity(r.IDs[0])
	label, named = joinNames(r.Namespace, r.Pod), r.Pod != ""
	switch {
	case id.PodUID != "":
		if !named {
			label = "pod" + id.PodUID
		}
		return "uid:" + id.PodUID, label, named, true
	case named:
		return "k8s:" + label, label, true, true
	}
	return "", "", false, false
}

// joinNames joins the non-empty names with slashes.
func joinNames(names ...string) string {
	var b strings.Builder
	for _, n := range names {
		if n == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(n)
	}
	return b.String()
}

// shortID shortens a container id as docker and crictl print it.
func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
