package cgroupfs

import "strings"

// containerIDLen is the length of the container ids docker, containerd,
// CRI-O and podman make: 64 hex digits.
const containerIDLen = 64

// scopePrefixes maps the prefix a runtime puts before a container id in
// the cgroup it makes ("cri-containerd-<id>.scope") to the runtime. The
// cgroupfs driver drops the ".scope" suffix, CRI-O keeps its prefix.
var scopePrefixes = map[string]struct {
	runtime string
	monitor bool
}{
	"cri-containerd": {runtime: RuntimeContainerd},
	"nerdctl":        {runtime: RuntimeContainerd},
	"crio":           {runtime: RuntimeCRIO},
	"crio-conmon":    {runtime: RuntimeCRIO, monitor: true},
	"docker":         {runtime: RuntimeDocker},
	"libpod":         {runtime: RuntimePodman},
	"libpod-conmon":  {runtime: RuntimePodman, monitor: true},
}

// bareIDParents maps the path element above a bare container id to the
// runtime that puts its containers there with the cgroupfs driver.
var bareIDParents = map[string]string{
	"docker": RuntimeDocker,
}

// containerIn returns the container id in the path element elem, whose
// parent element is prev, and the runtime that made it. ok is false when
// elem holds no container id.
func containerIn(elem, prev string) (id, runtime string, monitor, ok bool) {
	s := strings.TrimSuffix(elem, ".scope")
	if isContainerID(s) {
		return s, bareIDParents[prev], false, true
	}
	if len(s) < containerIDLen+2 || s[len(s)-containerIDLen-1] != '-' {
		return "", "", false, false
	}
	id = s[len(s)-containerIDLen:]
	p, known := scopePrefixes[s[:len(s)-containerIDLen-1]]
	if !known || !isContainerID(id) {
		return "", "", false, false
	}
	return id, p.runtime, p.monitor, true
}

// isContainerID reports whether s is 64 lower-case hex digits.
func isContainerID(s string) bool {
	if len(s) != containerIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) || ('A' <= s[i] && s[i] <= 'F') {
			return false
		}
	}
	return true
}

// isHex reports whether c is a hex digit.
func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
