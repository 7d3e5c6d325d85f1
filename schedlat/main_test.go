package schedlat

import (
	"os"
	"testing"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

func TestMain(m *testing.M) {
	testproc.Main()
	latencyHelper()
	exitHelper()
	os.Exit(m.Run())
}

// openSource opens the default test hierarchy and a Source over it with
// opts, closed when t ends. On a kernel without BPF task storage it skips:
// TestFallbackReal checks that case, and the kernel matrix says which
// kernels it is.
func openSource(t testing.TB, opts Options) (*cgroupfs.Hierarchy, *Source) {
	t.Helper()
	e2e.RequireRoot(t)
	if err := Supported(); err != nil {
		t.Skipf("kernel without BPF task storage (TestFallbackReal checks the fallback): %v", err)
	}
	name := testcg.Default()
	h, err := cgroupfs.Open(testcg.Root, name)
	if err != nil {
		e2e.Unavailable(t, "no "+name+" hierarchy: "+err.Error())
	}
	opts.Hierarchy = h
	s, err := Open(opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return h, s
}
