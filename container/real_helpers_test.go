package container_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/schedstat"
)

func TestMain(m *testing.M) {
	testproc.Main()
	os.Exit(m.Run())
}

// dirLister lists real v1 cgroup directories as a tree: dirs[0] is "/",
// every other one a child of it named by its base name. It reads each
// directory's tasks file, as the cgroupfs walker does on v1.
type dirLister struct {
	t    *testing.T
	dirs []string
}

func (d *dirLister) List(l *cgroupfs.Listing) error {
	l.Reset()
	for i, dir := range d.dirs {
		path, parent := "/", -1
		if i > 0 {
			path, parent = "/"+filepath.Base(dir), 0
		}
		c := l.Add(path, parent)
		var st syscall.Stat_t
		if err := syscall.Stat(dir, &st); err != nil {
			return err
		}
		c.ID = st.Ino
		c.TIDs = append(c.TIDs, testcg.Threads(d.t, dir)...)
		c.UsageNanoseconds, c.HasUsage = testcg.Usage(d.t, dir), true
	}
	return nil
}

// kernelStat reads /proc/<pid>/task/<tid>/schedstat directly.
func kernelStat(t *testing.T, pid int, tid int32) schedstat.Stat {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, tid))
	if err != nil {
		t.Fatal(err)
	}
	s, err := schedstat.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sumStats sums the kernel's counters over every thread of pid.
func sumStats(t *testing.T, p *testproc.Proc) schedstat.Stat {
	t.Helper()
	var sum schedstat.Stat
	for _, tid := range p.Threads(t) {
		sum = sum.Add(kernelStat(t, p.PID, tid))
	}
	return sum
}
