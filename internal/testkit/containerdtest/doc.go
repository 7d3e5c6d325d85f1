// Package containerdtest runs a real containerd for tests: Debian's
// containerd and runc, with a config, root, state directory and socket of
// its own under a temporary directory, so it never touches a containerd of
// the machine. Tests drive it through its real CRI, as kubelet does: pod
// sandboxes with kubelet's cgroupfs-driver cgroup parents
// (<root>/kubepods/<qos>/pod<uid>), host networking and no hostname (there
// is no CNI), containers of one-layer busybox images built here and
// imported without a registry.
//
// Everything it makes is removed when the test ends, pass or fail: pods
// through the CRI while containerd answers, then by force whatever is left
// (the shims serving this containerd, the processes in its cgroups, the
// cgroups, the mounts under its directory), and a test error names
// anything that could not be removed.
//
// It needs root and the Debian packages containerd, runc and
// busybox-static; without them a test skips, or fails under
// SCHEDSTATD_E2E=1 (see internal/e2e).
package containerdtest
