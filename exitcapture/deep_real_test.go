package exitcapture

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"golang.org/x/sys/unix"
)

// deepChain makes a chain of n cgroups below dir, each named by a long
// name, by directory fds, since the whole path is longer than PATH_MAX.
// It returns an fd on the deepest directory and the chain's path relative
// to dir; clean-up removes the chain bottom up.
func deepChain(t *testing.T, dir string, n int) (int, string) {
	t.Helper()
	name := strings.Repeat("d", 70)
	fds := []int{}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	fds = append(fds, fd)
	t.Cleanup(func() {
		for i := len(fds) - 1; i > 0; i-- {
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				err := unix.Unlinkat(fds[i-1], name, unix.AT_REMOVEDIR)
				if err == nil || err == unix.ENOENT || time.Now().After(deadline) {
					if err != nil && err != unix.ENOENT {
						t.Errorf("remove level %d: %v", i, err)
					}
					break
				}
			}
		}
		for _, fd := range fds {
			unix.Close(fd)
		}
	})
	var rel strings.Builder
	for range n {
		if err := unix.Mkdirat(fds[len(fds)-1], name, 0o755); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Openat(fds[len(fds)-1], name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, fd)
		rel.WriteString("/" + name)
	}
	return fds[len(fds)-1], rel.String()
}

// TestCoverageDeepCgroup: a cgroup 60 levels deep, its path far beyond
// PATH_MAX: the walk reaches it by directory fds and the records name it
// by id, so threads that exit there count up to their exit: its run time
// matches its CPU counter within 1%.
func TestCoverageDeepCgroup(t *testing.T) {
	top := testcg.Make(t, walked)
	deep, rel := deepChain(t, top, 60)
	rel = strings.TrimPrefix(top, testcg.Dir(walked)) + rel
	if len(rel) <= unix.PathMax {
		t.Fatalf("path of %d bytes is not beyond PATH_MAX", len(rel))
	}
	s := openSource(t, Options{})
	p := newPair(t, s, walked)
	proc := testproc.Start(t, 4, nil)
	procs, err := unix.Openat(deep, "cgroup.procs", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = unix.Write(procs, []byte(strconv.Itoa(proc.PID)))
	unix.Close(procs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testcg.Move(t, top, proc.PID) })
	p.pass(t)
	// What the helper ran before the move is in its threads' counters but
	// not in the cgroup's: count from here.
	proc.Stop(t)
	p.pass(t)
	usage0, run0 := deepUsage(t, deep), run(t, p.capture, rel)
	proc.Cont(t)
	time.Sleep(500 * time.Millisecond)
	proc.Release(t) // the spinning threads exit
	p.settle(t)
	proc.Stop(t)
	p.pass(t)
	usage, ran := deepUsage(t, deep)-usage0, run(t, p.capture, rel)-run0
	t.Logf("path of %d bytes: ran %d ns, CPU counter %d ns (%.4f); exit events %d, unattributed %d",
		len(rel), ran, usage, float64(ran)/float64(usage), p.capture.Counters().ExitEvents, p.capture.Counters().UnattributedExits)
	if r := float64(ran) / float64(usage); r < 0.99 || r > 1.01 {
		t.Errorf("the deep cgroup ran %d ns, its CPU counter %d ns: more than 1%% apart", ran, usage)
	}
}

// deepUsage reads cpuacct.usage (or cpu.stat usage_usec) of the cgroup
// open as dirfd.
func deepUsage(t *testing.T, dirfd int) uint64 {
	t.Helper()
	read := func(name string) ([]byte, error) {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		defer unix.Close(fd)
		b := make([]byte, 4096)
		n, err := unix.Read(fd, b)
		return b[:max(n, 0)], err
	}
	b, err := read("cpuacct.usage")
	scale := uint64(1)
	if errors.Is(err, unix.ENOENT) { // cgroup2: cpu.stat's usage_usec
		var stat []byte
		if stat, err = read("cpu.stat"); err == nil {
			b, scale = nil, 1000
			for _, line := range bytes.Split(stat, []byte("\n")) {
				if v, ok := bytes.CutPrefix(line, []byte("usage_usec ")); ok {
					b = v
				}
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v * scale
}
