package testproc_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

func TestMain(m *testing.M) {
	testproc.Main()
	os.Exit(m.Run())
}

func TestStartSleepersSleep(t *testing.T) {
	const n = 200
	p := testproc.StartSleepers(t, n)
	if len(p.Workers) != n {
		t.Fatalf("got %d thread ids, want %d", len(p.Workers), n)
	}
	seen := map[int32]bool{}
	for _, tid := range p.Workers {
		if seen[tid] {
			t.Fatalf("thread id %d printed twice", tid)
		}
		seen[tid] = true
	}
	// Every thread is asleep soon after it reported: none spins.
	deadline := time.Now().Add(10 * time.Second)
	for _, tid := range p.Workers {
		for testproc.State(p.PID, tid) != 'S' {
			if time.Now().After(deadline) {
				t.Fatalf("thread %d of %d is in state %q, want S", tid, p.PID, testproc.State(p.PID, tid))
			}
			time.Sleep(time.Millisecond)
		}
	}
	p.Kill()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", p.PID)); !os.IsNotExist(err) {
		t.Errorf("helper %d still exists after Kill: %v", p.PID, err)
	}
}

func TestStartSpinsUntilReleased(t *testing.T) {
	const n = 3
	p := testproc.Start(t, n, nil)
	if len(p.Workers) != n {
		t.Fatalf("got %d thread ids, want %d", len(p.Workers), n)
	}
	// A spinning thread is running or waiting for a CPU, never asleep for
	// long: sample until each has been seen running.
	deadline := time.Now().Add(10 * time.Second)
	for _, tid := range p.Workers {
		for testproc.State(p.PID, tid) != 'R' {
			if time.Now().After(deadline) {
				t.Fatalf("thread %d of %d never seen running", tid, p.PID)
			}
			time.Sleep(time.Millisecond)
		}
	}
	p.Release(t)
	left := map[int32]bool{}
	for _, tid := range p.Threads(t) {
		left[tid] = true
	}
	for _, tid := range p.Workers {
		if left[tid] {
			t.Errorf("worker %d still exists after Release", tid)
		}
	}
	if !left[int32(p.PID)] {
		t.Errorf("the helper's main thread is gone: the process should outlive its workers")
	}
}

// TestChurnPauses pauses a churn again and again at random moments: each
// Pause returns, though threads of the churn exit around the stop, with
// every thread of the churn stopped.
func TestChurnPauses(t *testing.T) {
	cg := testcg.Make(t, "cpuacct")
	c := testproc.StartChurnIn(t, cg)
	for i := range 30 {
		time.Sleep(time.Duration(rand.Int64N(int64(20 * time.Millisecond))))
		c.Pause(t)
		for _, tid := range testproc.Threads(t, c.PID()) {
			if s := testproc.State(c.PID(), tid); s != 'T' && s != 0 {
				t.Fatalf("pause %d: thread %d of the churn in state %q, want T", i, tid, s)
			}
		}
		c.Resume(t)
	}
}
