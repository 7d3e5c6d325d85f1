package containerdtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// shimSocketDir is where containerd 1.6's shims make their sockets,
// whatever containerd's own state directory.
const shimSocketDir = "/run/containerd/s"

// removePod stops and removes p through the CRI, then removes its cgroup
// in every hierarchy.
func (c *Containerd) removePod(p *Pod) error {
	ctx, cancel := callContext()
	defer cancel()
	if _, err := c.Runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.SandboxID}); err != nil {
		return fmt.Errorf("StopPodSandbox %s/%s: %w", p.Namespace, p.Name, err)
	}
	if _, err := c.Runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.SandboxID}); err != nil {
		return fmt.Errorf("RemovePodSandbox %s/%s: %w", p.Namespace, p.Name, err)
	}
	c.pods = slices.DeleteFunc(c.pods, func(q *Pod) bool { return q == p })
	if p.CgroupParent == "" {
		return nil // unknown here: the removal of CgroupRoot takes it
	}
	return c.removeCgroups(p.CgroupParent)
}

// removeCgroups removes the cgroup rel (relative to a hierarchy's root)
// in every hierarchy, with what runs in it. It refuses any cgroup outside
// CgroupRoot.
func (c *Containerd) removeCgroups(rel string) error {
	if rel != c.CgroupRoot && !strings.HasPrefix(rel, c.CgroupRoot+"/") {
		return fmt.Errorf("refusing to remove cgroup %q outside %s", rel, c.CgroupRoot)
	}
	var errs []error
	for _, h := range hierarchies() {
		errs = append(errs, removeCgroupTree(filepath.Join(h, rel)))
	}
	return errors.Join(errs...)
}

// cleanup removes all that c made, the graceful way while containerd
// answers, then by force, and fails the test if anything is left.
func (c *Containerd) cleanup() {
	t := c.t
	if c.Running() {
		ctx, cancel := callContext()
		r, err := c.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		cancel()
		if err != nil {
			t.Logf("containerd clean-up: ListPodSandbox: %v", err)
		}
		for _, s := range r.GetItems() {
			if err := c.removePod(&Pod{Name: s.GetMetadata().GetName(), Namespace: s.GetMetadata().GetNamespace(), SandboxID: s.GetId(),
				CgroupParent: podCgroup(c.pods, s.GetId())}); err != nil {
				t.Logf("containerd clean-up: %v", err)
			}
		}
	}
	c.Stop()
	if c.conn != nil {
		c.conn.Close()
	}
	var errs []error
	errs = append(errs, c.killShims())
	errs = append(errs, c.removeCgroups(c.CgroupRoot))
	errs = append(errs, unmountUnder(c.Dir))
	if t.Failed() {
		t.Logf("containerd log:\n%s", c.Log())
	}
	errs = append(errs, os.RemoveAll(c.Dir))
	if err := errors.Join(errs...); err != nil {
		t.Errorf("containerd clean-up: %v", err)
	}
	if left := c.leftovers(); len(left) > 0 {
		t.Errorf("containerd clean-up left behind: %s", strings.Join(left, "; "))
	}
}

// podCgroup returns the cgroup parent of the pod with sandbox id among
// pods, or "" (then the cgroup root's removal takes it).
func podCgroup(pods []*Pod, id string) string {
	for _, p := range pods {
		if p.SandboxID == id {
			return p.CgroupParent
		}
	}
	return ""
}

// leftovers names what is left of c: processes that name its socket, its
// cgroups, mounts under its directory, the directory.
func (c *Containerd) leftovers() []string {
	var left []string
	for _, p := range c.processes() {
		left = append(left, fmt.Sprintf("process %d %q", p.pid, p.argv))
	}
	for _, h := range hierarchies() {
		if _, err := os.Stat(filepath.Join(h, c.CgroupRoot)); err == nil {
			left = append(left, "cgroup "+filepath.Join(h, c.CgroupRoot))
		}
	}
	for _, m := range mountsUnder(c.Dir) {
		left = append(left, "mount "+m)
	}
	if _, err := os.Stat(c.Dir); err == nil {
		left = append(left, "directory "+c.Dir)
	}
	return left
}

// process is a process found by its command line.
type process struct {
	pid  int
	argv []string
}

// processes returns the live processes whose command line names c's
// socket: containerd itself and its shims.
func (c *Containerd) processes() []process {
	ents, _ := os.ReadDir("/proc")
	var ps []process
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue // gone, or a zombie
		}
		argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if slices.ContainsFunc(argv, func(a string) bool { return a == c.Socket || strings.Contains(a, c.Dir+"/") }) {
			ps = append(ps, process{pid: pid, argv: argv})
		}
	}
	return ps
}

// killShims kills the shims that serve c (and c, if it still runs),
// waits for them to go, and removes the sockets they listened on in
// shimSocketDir.
func (c *Containerd) killShims() error {
	ps := c.processes()
	if len(ps) == 0 {
		return nil
	}
	paths := unixSocketPaths()
	var sockets []string
	for _, p := range ps {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.pid))
		for _, fd := range fds {
			l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", p.pid, fd.Name()))
			if err != nil {
				continue
			}
			if inode, ok := strings.CutPrefix(l, "socket:["); ok {
				if path := paths[strings.TrimSuffix(inode, "]")]; strings.HasPrefix(path, shimSocketDir+"/") {
					sockets = append(sockets, path)
				}
			}
		}
		syscall.Kill(p.pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(c.processes()) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of %s left after SIGKILL", c.Socket)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, s := range sockets {
		os.Remove(s)
	}
	return nil
}

// unixSocketPaths maps socket inodes to the paths they are bound to, from
// /proc/net/unix.
func unixSocketPaths() map[string]string {
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return nil
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Scan() // the header
	for sc.Scan() {
		// Num RefCount Protocol Flags Type St Inode Path
		f := strings.Fields(sc.Text())
		if len(f) >= 8 {
			m[f[6]] = f[7]
		}
	}
	return m
}
