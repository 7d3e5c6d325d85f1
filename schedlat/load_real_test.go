package schedlat

import (
	"testing"
	"time"
)

// TestLoadReal loads the program for each set of features, and with the
// previous task's state read from task_struct as on kernels before 5.18,
// which have no prev_state argument: the kernel's verifier accepts each,
// and with the latency on, the node's switches count waits.
func TestLoadReal(t *testing.T) {
	for _, o := range []Options{{Latency: true}, {Preemption: true}, {Latency: true, Preemption: true}, {Latency: true, Preemption: true, stateFromTask: true}} {
		_, s := openSource(t, o)
		time.Sleep(200 * time.Millisecond)
		c, err := s.Read()
		if err != nil {
			t.Fatal(err)
		}
		var tot Counts
		for _, v := range c {
			tot.Add(&v)
		}
		t.Logf("latency %v, preemption %v, state from task %v: %d cgroups, %d waits, %d preemptions, lost %+v",
			o.Latency, o.Preemption, o.stateFromTask, len(c), tot.Waits, tot.Preemptions(), s.Lost())
		if o.Latency && tot.Waits == 0 {
			t.Errorf("no wait counted in 200ms")
		}
		if !o.Latency && tot.Waits != 0 || !o.Preemption && tot.Preemptions() != 0 {
			t.Errorf("counts of a feature that is off: %+v", tot)
		}
		s.Close()
	}
}
