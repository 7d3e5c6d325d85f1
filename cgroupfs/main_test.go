package cgroupfs

import (
	"os"
	"testing"

	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// TestMain runs the test binary as a helper process when it was started as
// one, testproc's or the pidns helper, and runs the tests otherwise.
func TestMain(m *testing.M) {
	testproc.Main()
	if os.Getenv(pidnsHelperEnv) != "" {
		pidnsHelper()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
