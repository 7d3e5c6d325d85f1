package sleepers_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/sleepers"
)

func TestMain(m *testing.M) {
	sleepers.Main()
	os.Exit(m.Run())
}

func TestStartSleeps(t *testing.T) {
	const n = 200
	p := sleepers.Start(t, n)
	if len(p.TIDs) != n {
		t.Fatalf("got %d thread ids, want %d", len(p.TIDs), n)
	}
	seen := map[int32]bool{}
	for _, tid := range p.TIDs {
		if seen[tid] {
			t.Fatalf("thread id %d printed twice", tid)
		}
		seen[tid] = true
	}
	// Every thread is asleep soon after it reported: none spins.
	deadline := time.Now().Add(10 * time.Second)
	for _, tid := range p.TIDs {
		for state(p.PID, tid) != 'S' {
			if time.Now().After(deadline) {
				t.Fatalf("thread %d of %d is in state %q, want S", tid, p.PID, state(p.PID, tid))
			}
			time.Sleep(time.Millisecond)
		}
	}
	p.Kill()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", p.PID)); !os.IsNotExist(err) {
		t.Errorf("helper %d still exists after Kill: %v", p.PID, err)
	}
}

func state(pid int, tid int32) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	return s[i+2]
}
