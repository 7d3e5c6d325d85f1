package schedlat

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// contend keeps twice as many threads as there are CPUs busy for d, so
// that each waits on a runqueue now and then.
func contend(d time.Duration) {
	var wg sync.WaitGroup
	for range 2 * runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			for end := time.Now().Add(d); time.Now().Before(end); {
			}
		}()
	}
	wg.Wait()
}

// TestLoadReal loads the program for each set of features, and with the
// previous task's state read from task_struct as on kernels before 5.18,
// which have no prev_state argument: the kernel's verifier accepts each,
// and with the latency on, the switches of threads that contend for the
// CPUs count waits (a quiet node, as a VM of the kernel matrix is, may
// have none of its own in 200 ms).
func TestLoadReal(t *testing.T) {
	for _, o := range []Options{{Latency: true}, {Preemption: true}, {Latency: true, Preemption: true}, {Latency: true, Preemption: true, stateFromTask: true}} {
		_, s := openSource(t, o)
		contend(200 * time.Millisecond)
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
		// Every kernel of the matrix but 5.10 (no task storage, no
		// Source) takes the buffer: a refusal there falls back to
		// counting every switch directly, which costs about 40 ns more
		// a switch and would otherwise go unseen.
		if buffered, why := s.Buffered(); !buffered && testproc.KernelAtLeast(t, 6, 1) {
			t.Errorf("the kernel refused the buffered program: %v", why)
		}
		s.Close()
	}
}

// TestDirectFallbackReal refuses the buffered program, as a kernel
// without BPF atomics would: Open loads the one that counts every switch
// in its cgroup's stats, with no flush iterator, and it counts.
func TestDirectFallbackReal(t *testing.T) {
	var refused int
	_, s := openSource(t, Options{Latency: true, Preemption: true, Load: func(spec *ebpf.CollectionSpec) (*ebpf.Collection, error) {
		if spec.Programs[flushName] != nil {
			refused++
			return nil, errors.New("refused for the test")
		}
		return ebpf.NewCollection(spec)
	}})
	if buffered, why := s.Buffered(); refused != 1 || buffered || why == nil {
		t.Fatalf("buffered program refused %d times, buffered %v (%v): want one refusal, unbuffered, and why", refused, buffered, why)
	}
	contend(200 * time.Millisecond)
	c, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	var tot Counts
	for _, v := range c {
		tot.Add(&v)
	}
	t.Logf("%d cgroups, %d waits, %d preemptions", len(c), tot.Waits, tot.Preemptions())
	if tot.Waits == 0 {
		t.Error("no wait counted in 200ms")
	}
}
