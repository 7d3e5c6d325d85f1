package cgroupfs

import "strings"

// Container runtimes ParseIdentity recognises, as Identity.Runtime names
// them.
const (
	RuntimeContainerd = "containerd"
	RuntimeCRIO       = "cri-o"
	RuntimeDocker     = "docker"
	RuntimePodman     = "podman"
)

// Kubernetes QoS classes, as Identity.QoS names them.
const (
	QoSGuaranteed = "guaranteed"
	QoSBurstable  = "burstable"
	QoSBestEffort = "besteffort"
)

// Identity is what a cgroup's path says about it. Every field but ID and
// Name is "" when the path does not say.
type Identity struct {
	// ID is the path relative to the hierarchy root, "/" for the root:
	// the id label.
	ID string
	// Name is ContainerID when there is one, otherwise the last path
	// element (a systemd unit, a slice), "/" for the root: the name label.
	Name string
	// ContainerID is the innermost container id on the path: a cgroup
	// nested in a container belongs to it. Entering a kubepods tree (as
	// in a kind node, itself a container) starts afresh, so the node's
	// own id does not name the pods in it.
	ContainerID string
	// Runtime is the runtime that made the container cgroup, when its
	// name tells (a scope prefix, /docker/<id>); a bare id under kubepods
	// does not.
	Runtime string
	// Monitor is true for a runtime's per-container monitor (conmon),
	// whose cgroup carries the container's id but not its processes.
	Monitor bool
	// PodUID is the Kubernetes pod uid, with dashes.
	PodUID string
	// QoS is the pod's (or QoS slice's) Kubernetes QoS class.
	QoS string
}

// ParseIdentity returns what path, a cgroup path relative to the
// hierarchy root, tells about the cgroup. It knows the shapes made by
// kubelet with the cgroupfs and systemd drivers (kubepods, QoS, pod and
// container cgroups, also nested in a kind node), by docker, containerd
// (CRI, nerdctl, ctr), CRI-O and podman, and systemd slices and units. It
// never fails; an unknown shape gives only ID and Name.
func ParseIdentity(path string) Identity {
	id := Identity{ID: path}
	var inPods bool
	var prev, last string
	for i, elem := range strings.FieldsFunc(path, isSlash) {
		last = elem
		if sid, ok := slicePathElem(elem); ok {
			// One element stands for the path kubelet meant: a pod
			// slice, then the container.
			id = sid
			id.ID = path
			inPods = true
			prev = elem
			continue
		}
		if cid, runtime, monitor, ok := containerIn(elem, prev); ok {
			id.ContainerID, id.Runtime, id.Monitor = cid, runtime, monitor
		} else if i == 1 && containerdNamespaces[prev] {
			id.ContainerID, id.Runtime, id.Monitor = elem, RuntimeContainerd, false
		}
		switch seg := sliceSegment(elem); {
		case seg == "kubepods":
			inPods = true
			id = Identity{ID: path}
		case !inPods || id.PodUID != "" || id.ContainerID != "":
		case seg == QoSBurstable || seg == QoSBestEffort:
			id.QoS = seg
		case strings.HasPrefix(seg, "pod") && isPodUID(seg[len("pod"):]):
			id.PodUID = strings.ReplaceAll(seg[len("pod"):], "_", "-")
			if id.QoS == "" {
				id.QoS = QoSGuaranteed
			}
		}
		prev = elem
	}
	switch {
	case id.ContainerID != "":
		id.Name = id.ContainerID
	case last != "":
		id.Name = last
	case strings.HasPrefix(path, "/"):
		id.Name = "/"
	}
	return id
}

// containerdNamespaces are the containerd namespaces whose containers ctr
// and nerdctl put at /<namespace>/<id> when no cgroup path is given.
var containerdNamespaces = map[string]bool{"default": true, "k8s.io": true}

// isSlash reports whether r separates path elements.
func isSlash(r rune) bool { return r == '/' }

// sliceSegment returns the part of a path element that names the cgroup
// on its own. A systemd slice name repeats its parents' names, joined by
// dashes ("kubepods-burstable-pod<uid>.slice" is in
// "kubepods-burstable.slice"), so only the text after the last dash
// counts; other elements count whole.
func sliceSegment(elem string) string {
	s, ok := strings.CutSuffix(elem, ".slice")
	if !ok {
		return elem
	}
	return s[strings.LastIndexByte(s, '-')+1:]
}

// isPodUID reports whether s is a pod uid as kubelet writes it in a path:
// 36 characters of a UUID with dashes (the systemd driver turns them into
// underscores), or 32 hex digits (a static pod's uid is a hash).
func isPodUID(s string) bool {
	if len(s) != 36 && len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isHex(c) && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// slicePathElem parses a path element in systemd's "slice:prefix:name"
// notation, as kubelet with the systemd cgroup driver asks the runtime for
// "kubepods-burstable-pod<uid>.slice:cri-containerd:<id>". A runtime on the
// cgroupfs driver (a common misconfiguration) makes one directory of that
// name under the root rather than the slices it means. ok is false unless
// elem names a kubepods pod slice and a container id.
func slicePathElem(elem string) (id Identity, ok bool) {
	slice, rest, ok1 := strings.Cut(elem, ":")
	prefix, name, ok2 := strings.Cut(rest, ":")
	base, ok3 := strings.CutSuffix(slice, ".slice")
	if !ok1 || !ok2 || !ok3 || !isContainerID(name) {
		return Identity{}, false
	}
	parts := strings.Split(base, "-")
	if parts[0] != "kubepods" {
		return Identity{}, false
	}
	pod := parts[len(parts)-1]
	if !strings.HasPrefix(pod, "pod") || !isPodUID(pod[len("pod"):]) {
		return Identity{}, false
	}
	id.PodUID = strings.ReplaceAll(pod[len("pod"):], "_", "-")
	switch {
	case len(parts) == 3 && (parts[1] == QoSBurstable || parts[1] == QoSBestEffort):
		id.QoS = parts[1]
	case len(parts) == 2:
		id.QoS = QoSGuaranteed
	default:
		return Identity{}, false
	}
	id.ContainerID = name
	if p, known := scopePrefixes[prefix]; known {
		id.Runtime, id.Monitor = p.runtime, p.monitor
	}
	return id, true
}
