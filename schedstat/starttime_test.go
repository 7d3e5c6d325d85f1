package schedstat_test

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/schedstatd/schedstatd/schedstat"
)

// startTimeCases covers every *.stat fixture. wantErr is ErrParse for a
// malformed file, or os.ErrNotExist for the one entry whose file is missing
// on purpose.
var startTimeCases = []fixtureCase[uint64]{
	{file: "sleep.stat", want: 38975},
	{file: "kworker.stat", want: 26},
	{file: "comm-parens.stat", want: 12345},
	{file: "comm-fake-fields.stat", want: 12345},
	{file: "comm-spaces.stat", want: 12345},
	{file: "comm-newline.stat", want: 12345},
	{file: "starttime-last.stat", want: 4711},
	{file: "truncated.stat", wantErr: schedstat.ErrParse},
	{file: "ends-at-paren.stat", wantErr: schedstat.ErrParse},
	{file: "no-paren.stat", wantErr: schedstat.ErrParse},
	{file: "starttime-garbage.stat", wantErr: schedstat.ErrParse},
	{file: "starttime-negative.stat", wantErr: schedstat.ErrParse},
	{file: "starttime-overflow.stat", wantErr: schedstat.ErrParse},
	{file: "double-space.stat", wantErr: schedstat.ErrParse},
	{file: "empty.stat", wantErr: schedstat.ErrParse},
	{file: "missing.stat", wantErr: os.ErrNotExist},
}

func TestParseStartTimeFixtures(t *testing.T) {
	runFixtureCases(t, "ParseStartTime", startTimeCases, schedstat.ParseStartTime)
}

func TestParseStartTimeFixturesCovered(t *testing.T) {
	checkCovered(t, "*.stat", caseFiles(startTimeCases), "missing.stat")
}

func TestStartTicks(t *testing.T) {
	// nsec_to_clock_t truncates: 161533.99... ticks is 161533.
	if got := schedstat.StartTicks(1_615_339_999_999); got != 161533 {
		t.Errorf("StartTicks = %d, want 161533", got)
	}
}

// TestBootTicks starts a process between two readings of the boot clock:
// its start time in /proc lies between them.
func TestBootTicks(t *testing.T) {
	before := schedstat.BootTicks()
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	after := schedstat.BootTicks()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	start, err := schedstat.ParseStartTime(b)
	if err != nil {
		t.Fatal(err)
	}
	if start < before || start > after {
		t.Errorf("a process started between boot clock %d and %d ticks has start time %d", before, after, start)
	}
}
