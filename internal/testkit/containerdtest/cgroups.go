package containerdtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// hierarchies returns the directories of the mounted cgroup hierarchies:
// the root itself on pure cgroup v2, else each directory under it.
func hierarchies() []string {
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		return []string{cgroupRoot}
	}
	ents, _ := os.ReadDir(cgroupRoot)
	var hs []string
	for _, e := range ents {
		if e.IsDir() {
			hs = append(hs, filepath.Join(cgroupRoot, e.Name()))
		}
	}
	return hs
}

// removeCgroupTree kills every process in the cgroup dir and below, then
// removes the cgroups, deepest first. A dir that does not exist is no
// error.
func removeCgroupTree(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if killed := killCgroupTree(dir); killed == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: processes left after SIGKILL", dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return rmdirTree(dir, deadline)
}

// killCgroupTree sends SIGKILL to every process listed in dir and below,
// and returns how many it found.
func killCgroupTree(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
				n++
			}
		}
		return nil
	})
	return n
}

// rmdirTree removes the cgroup dir and its children, deepest first,
// retrying until deadline while a cgroup is busy (its last task not yet
// gone).
func rmdirTree(dir string, deadline time.Time) error {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			if err := rmdirTree(filepath.Join(dir, e.Name()), deadline); err != nil {
				return err
			}
		}
	}
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
