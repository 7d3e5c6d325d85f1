package exitcapture

import (
	"math"
	"os/exec"
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
//
// "stopped" stops the spinner around each move, so the counters the
// record carries are exact. "running" moves it while it runs on another
// CPU: a tick there between its switch of cgroup and the tracepoint (which
// fires after the move is done) is charged to the new cgroup but lies
// within the record's counters. Natively that window is microseconds and
// the 1% holds; under software emulation (-short, the kernel matrix's VMs)
// it is milliseconds, and each cgroup's error with move records must be
// below a quarter of its error without.
func TestMigrationSplitsAtTheMove(t *testing.T) {
	for _, stopped := range []bool{true, false} {
		name := map[bool]string{true: "stopped", false: "running"}[stopped]
		t.Run(name, func(t *testing.T) { migrationSplit(t, stopped) })
	}
}

func migrationSplit(t *testing.T, stopped bool) {
	a, b := testcg.Make(t, walked), testcg.Make(t, walked)
	s := openSource(t, Options{})
	if !s.Migrations() {
		t.Fatalf("no move records: %v", s.MigrationsErr())
	}
	p := newPair(t, s, walked)
	p.pass(t)
	spin := testproc.Spin(t)
	pid := spin.Process.Pid
	move := func(dir string) {
		if stopped {
			stop(t, spin)
		}
		testcg.Move(t, dir, pid)
		if stopped {
			if err := spin.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(100 * time.Millisecond) // its life before A
	move(a)
	time.Sleep(300 * time.Millisecond)
	p.pass(t)
	time.Sleep(300 * time.Millisecond)
	move(b)
	time.Sleep(300 * time.Millisecond)
	stop(t, spin)
	time.Sleep(50 * time.Millisecond) // past the reader's poll
	p.pass(t)
	st := s.Stats()
	for _, dir := range []string{a, b} {
		rel := "/" + filepath.Base(dir)
		usage := testcg.Usage(t, dir)
		got, polled := run(t, p.capture, rel), run(t, p.polls, rel)
		t.Logf("%s: run %.4fs with move records, %.4fs without; its counter %.4fs", rel, float64(got)/1e9, float64(polled)/1e9, float64(usage)/1e9)
		errWith, errWithout := math.Abs(float64(got)-float64(usage)), math.Abs(float64(polled)-float64(usage))
		switch {
		case stopped || !testing.Short():
			if errWith > 0.01*float64(usage) {
				t.Errorf("%s: run %d ns, its counter %d ns: want within 1%%", rel, got, usage)
			}
		case errWith > errWithout/4:
			t.Errorf("%s: run %d ns with move records, %d without, its counter %d ns: want the error below a quarter of that without", rel, got, polled, usage)
		}
	}
	if c := p.capture.Counters(); c.Migrations < 2 || st.Migrations < 2 {
		t.Errorf("table took %d move records (%d stale), source received %d: want both moves", c.Migrations, c.StaleMigrations, st.Migrations)
	}
}

// stop stops the process of c and waits until it is stopped.
func stop(t *testing.T, c *exec.Cmd) {
	t.Helper()
	if err := c.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	testproc.WaitStopped(t, c.Process.Pid)
}
