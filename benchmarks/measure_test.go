package benchmarks_test

import (
	"os"
	"testing"

	"github.com/schedstatd/schedstatd/internal/testkit/benchx"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	testproc.Main()
	cadvisorMain()
	os.Exit(m.Run())
}

// modes are back to back, and one pass after a sleep (benchx.Modes).
var modes = benchx.Modes()

// measure times pass as benchx.Measure does.
func measure(b *testing.B, m benchx.Mode, tasks int, pass func()) {
	b.Helper()
	benchx.Measure(b, m, tasks, pass)
}

// raiseNoFile raises the open file limit to at least n; the table keeps an
// fd per task. Raising the hard limit needs root.
func raiseNoFile(tb testing.TB, n uint64) {
	tb.Helper()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	want := unix.Rlimit{Cur: n, Max: max(n, lim.Max)}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err != nil {
		tb.Fatalf("raise RLIMIT_NOFILE from %d/%d to %d: %v", lim.Cur, lim.Max, n, err)
	}
}

// fdReserve is how many fds, beyond one per task, a benchmark process
// needs: its standard files and pipes, the runtime's, the walker's, and
// the helper's runtime threads, which are tasks too.
const fdReserve = 128

// fitThreads returns how many helper threads a benchmark that keeps one fd
// per thread may start: want, with the open file limit raised to fit, or,
// where the hard limit cannot be raised (raising it needs
// CAP_SYS_RESOURCE), as many hundreds as fit under it.
func fitThreads(tb testing.TB, want int) int {
	tb.Helper()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	need := uint64(want + fdReserve)
	if lim.Cur >= need {
		return want
	}
	if lim.Max >= need || unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: need, Max: need}) == nil {
		raiseNoFile(tb, need)
		return want
	}
	raiseNoFile(tb, lim.Max)
	fit := (int(lim.Max) - fdReserve) / 100 * 100
	tb.Logf("RLIMIT_NOFILE hard limit %d cannot be raised: %d threads instead of %d", lim.Max, fit, want)
	return fit
}
