package cgroupfs

import (
	"fmt"
	"path/filepath"
)

// kernelFile says where the cgroups of a walked hierarchy keep one
// optional kernel file: in their own directories, at the same relative
// path in another hierarchy (mirror), or nowhere (file ""). Runtimes,
// kubelet and systemd make a cgroup at the same path in every hierarchy,
// so the twin at the same path stands for the walked cgroup.
type kernelFile struct {
	file   string
	mirror string
}

// path returns the file of the cgroup rel of the walked hierarchy dir.
func (k kernelFile) path(dir, rel string) string {
	if k.mirror != "" {
		dir = k.mirror
	}
	return filepath.Join(dir, rel, k.file)
}

// kernelFiles are where a hierarchy's cgroups keep the optional kernel
// files: CFS bandwidth counters and CPU pressure.
type kernelFiles struct {
	bandwidth, pressure kernelFile
}

// findKernelFiles returns where the cgroups of l keep their bandwidth and
// pressure files. On v2 the bandwidth counters are in the cpu.stat the CPU
// counter is read from; on v1 they are in the walked hierarchy's own
// cpu.stat when the cpu controller is bound to it, else in the v1 cpu
// hierarchy beside it. Pressure is in v2 only: the walked hierarchy's own
// cpu.pressure, or that of the v2 hierarchy beside a v1 one; none when
// the v2 root has no cpu.pressure (PSI off, psi=0, or a kernel without
// CONFIG_PSI).
func findKernelFiles(l layout, p probe) kernelFiles {
	var k kernelFiles
	if l.version == V1 {
		if p.exists(filepath.Join(l.dir, "cpu.cfs_period_us")) {
			k.bandwidth = kernelFile{file: bandwidthFile}
		} else if cpu := findV1(filepath.Dir(l.dir), "cpu", p); cpu != "" && p.exists(filepath.Join(cpu, bandwidthFile)) {
			k.bandwidth = kernelFile{file: bandwidthFile, mirror: cpu}
		}
	}
	if l.unified != "" && p.exists(filepath.Join(l.unified, pressureFile)) {
		k.pressure = kernelFile{file: pressureFile}
		if l.version == V1 {
			k.pressure.mirror = l.unified
		}
	}
	return k
}

// useKernelFiles makes h read k's files; it must be called before the
// first List.
func (h *Hierarchy) useKernelFiles(k kernelFiles) {
	h.files = k
	h.w.bandwidth, h.w.pressure = k.bandwidth, k.pressure
}

// BandwidthFile returns the absolute path of the root cgroup's file whose
// siblings give Cgroup.Bandwidth: cpu.stat of the walked v2 hierarchy
// (where the counters appear only with the cpu controller enabled), of
// the walked v1 hierarchy when the cpu controller is bound to it, or of
// the v1 cpu hierarchy beside it; "" when there is none.
func (h *Hierarchy) BandwidthFile() string {
	if h.layout.version == V2 {
		return filepath.Join(h.layout.dir, bandwidthFile)
	}
	if h.files.bandwidth.file == "" {
		return ""
	}
	return h.files.bandwidth.path(h.layout.dir, "/")
}

// PressureFile returns the absolute path of the root cgroup's cpu.pressure
// whose siblings give Cgroup.Pressure: in the walked v2 hierarchy or the
// v2 hierarchy beside a walked v1 one. It is "" when the kernel reports no
// pressure (PSI off with psi=0, or built without CONFIG_PSI) or there is
// no v2 hierarchy.
func (h *Hierarchy) PressureFile() string {
	if h.files.pressure.file == "" {
		return ""
	}
	return h.files.pressure.path(h.layout.dir, "/")
}

// readKernelFiles reads the cgroup's bandwidth counters (v1; on v2 they
// come with the CPU counter) and its CPU pressure into c. It returns the
// first error; the part that failed is left without its Has flags.
func (w *walker) readKernelFiles(parentfd int, n *node, c *Cgroup) error {
	var berr, perr error
	if w.bandwidth.file != "" {
		c.Bandwidth, berr = w.readBandwidth(parentfd, n)
	}
	c.Pressure, perr = w.readPressure(parentfd, n)
	if berr != nil {
		return berr
	}
	return perr
}

// readKernelFile reads the file kind of the cgroup n, where f keeps it
// (relative to parentfd, or in a mirror hierarchy), through k when the
// walk keeps files, and parses it. A
// cgroup without the file (f.file ""), a missing file or a missing twin is
// the zero value and no error.
func readKernelFile[T any](w *walker, parentfd int, n *node, kind fileKind, k *keptFD, f kernelFile, parse func([]byte) (T, error)) (T, error) {
	var zero T
	if f.file == "" {
		return zero, nil
	}
	base := parentfd
	if f.mirror != "" {
		base = atCWD
	}
	err := w.readCounter(base, n, kind, k)
	if IsRemoved(err) {
		return zero, nil
	}
	var v T
	if err == nil {
		v, err = parse(w.buf)
	}
	if err != nil {
		return zero, fmt.Errorf("cgroupfs: %s: %w", f.path(w.dir, n.rel), err)
	}
	return v, nil
}
