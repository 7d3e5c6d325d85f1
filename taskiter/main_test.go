package taskiter_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/taskiter"
)

func TestMain(m *testing.M) {
	testproc.Main()
	os.Exit(m.Run())
}

// hierarchies are the hierarchies the real tests run over: the v1 cpuacct
// one and the unified one, both mounted on this kind of hybrid node.
var hierarchies = []string{"cpuacct", cgroupfs.Unified}

// open opens the hierarchy name under testcg's root and a Source over it,
// closed when t ends.
func open(t testing.TB, name string) (*cgroupfs.Hierarchy, *taskiter.Source) {
	t.Helper()
	e2e.RequireRoot(t)
	testcg.Require(t, name)
	h, err := cgroupfs.Open("/sys/fs/cgroup", name)
	if err != nil {
		e2e.Unavailable(t, "no "+name+" hierarchy: "+err.Error())
	}
	s, err := taskiter.Open(taskiter.Options{Hierarchy: h})
	if err != nil {
		t.Fatalf("open the task iterator: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return h, s
}

// rel returns dir as a cgroup path in h.
func rel(t testing.TB, h *cgroupfs.Hierarchy, dir string) string {
	t.Helper()
	r, err := filepath.Rel(h.Dir(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return "/" + r
}
