package exitcapture

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/schedstatd/schedstatd/internal/churn"
	"github.com/schedstatd/schedstatd/internal/testproc"
)

func TestMain(m *testing.M) {
	churn.Main()
	testproc.Main()
	raiseFDLimit()
	os.Exit(m.Run())
}

// raiseFDLimit lets the tables keep an fd for every thread on a busy node,
// as the daemon does; without the privilege the limit stays.
func raiseFDLimit() {
	const want = 1 << 20
	unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: want, Max: want})
}
