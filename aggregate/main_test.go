package aggregate

import (
	"os"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// TestMain lets a re-executed test binary become a helper (a churn or
// testproc workload) instead of running tests.
func TestMain(m *testing.M) {
	testproc.Main()
	os.Exit(m.Run())
}

// walked is the hierarchy the daemon walks on this machine by default: v1
// cpuacct on a hybrid node, the unified one on a pure v2 node.
var walked = testcg.Default()

// hierarchy opens the hierarchy called name under the test machine's
// cgroup root.
func hierarchy(t testing.TB, name string) *cgroupfs.Hierarchy {
	t.Helper()
	h, err := cgroupfs.Open(testcg.Root, name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// openSource opens a source over the walked hierarchy, unless opts names
// another, and closes it when the test ends. It needs root.
func openSource(t testing.TB, opts Options) *Source {
	t.Helper()
	e2e.RequireRoot(t)
	requireTaskStorage(t)
	if opts.Hierarchy == nil {
		opts.Hierarchy = hierarchy(t, walked)
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// requireTaskStorage skips t on a kernel without task storage (before
// 5.11), where the daemon falls back to the task iterator: TestSelect
// checks that fallback on every kernel, and the kernel matrix requires the
// real tests to pass from 5.11 on.
func requireTaskStorage(t testing.TB) {
	t.Helper()
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatalf("no kernel BTF: %v", err)
	}
	if err := hasTaskStorage(spec); err != nil {
		t.Skipf("this kernel cannot keep totals: %v", err)
	}
}

// TestLoads: the programs load and a read sees the test's own cgroup.
func TestLoads(t *testing.T) {
	s := openSource(t, Options{Exits: true})
	if err := s.Read(); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	t.Logf("%+v", st)
	if st.Cgroups == 0 || st.Tasks == 0 {
		t.Errorf("stats %+v: want cgroups and tasks", st)
	}
}
