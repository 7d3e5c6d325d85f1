package exitcapture

import (
	"math"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// TestMigrationSplitsAtTheMove moves a spinning single-threaded process
// into a cgroup A between two passes (it started elsewhere: its life
// before the move is not A's), then from A into B between two passes.
// With move records each cgroup's run seconds equal its own CPU counter
// (which counts from the move) within 1%; the table without them (polling,
// as before move records) is printed beside: it credits the task's whole
// life to A and A's share since the last pass to B.
func TestMigrationSplitsAtTheMove(t *testing.T) {
	a, b := testcg.Make(t, walked), testcg.Make(t, walked)
	s := openSource(t, Options{})
	if !s.Migrations() {
		t.Fatalf("no move records: %v", s.MigrationsErr())
	}
	p := newPair(t, s, walked)
	p.pass(t)
	spin := testproc.Spin(t)
	pid := spin.Process.Pid
	time.Sleep(100 * time.Millisecond) // its life before A
	testcg.Move(t, a, pid)
	time.Sleep(300 * time.Millisecond)
	p.pass(t)
	time.Sleep(300 * time.Millisecond)
	testcg.Move(t, b, pid)
	time.Sleep(300 * time.Millisecond)
	if err := spin.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for testproc.State(pid, int32(pid)) != 'T' {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // past the reader's poll
	p.pass(t)
	st := s.Stats()
	for _, dir := range []string{a, b} {
		rel := "/" + filepath.Base(dir)
		usage := testcg.Usage(t, dir)
		got, polled := run(t, p.capture, rel), run(t, p.polls, rel)
		t.Logf("%s: run %.4fs with move records, %.4fs without; its counter %.4fs", rel, float64(got)/1e9, float64(polled)/1e9, float64(usage)/1e9)
		if math.Abs(float64(got)/float64(usage)-1) > 0.01 {
			t.Errorf("%s: run %d ns, its counter %d ns: want within 1%%", rel, got, usage)
		}
	}
	if c := p.capture.Counters(); c.Migrations < 2 || st.Migrations < 2 {
		t.Errorf("table took %d move records (%d stale), source received %d: want both moves", c.Migrations, c.StaleMigrations, st.Migrations)
	}
}
