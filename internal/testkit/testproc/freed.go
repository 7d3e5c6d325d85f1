package testproc

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// AwaitFrees returns once every task reaped before it was called has been
// freed and poll has reported it: it calls poll every 2 ms until poll has
// called freed with the tid of a marker FreeMarkers started on each CPU.
// poll reports the tasks whose sched_process_free it has seen since its
// last call, typically the records a program wrote there, read in the
// order they were written.
//
// The kernel sometimes sends no sched_process_free record for a task at
// all (exitcapture's TestGapFreeHookEveryThread, a known gap): a CPU whose
// marker is not seen within 2 s gets another one, after another
// rcu_barrier, queued behind the first, and either's free will do; a CPU
// with none seen after four rounds fails the test.
func AwaitFrees(t testing.TB, poll func(freed func(tid int32))) {
	t.Helper()
	time.Sleep(10 * time.Millisecond) // a reaped task may not have switched away yet
	markers := make(map[int32]int)    // every marker's tid: its CPU
	waiting := make(map[int]bool)     // CPUs none of whose markers was seen
	start := func(cpus []int) {
		for cpu, tid := range freeMarkers(t, cpus) {
			markers[tid] = cpu
			waiting[cpu] = true
		}
	}
	start(nil)
	freed := func(tid int32) {
		if cpu, ok := markers[tid]; ok {
			delete(waiting, cpu)
		}
	}
	for round := 1; ; round++ {
		for deadline := time.Now().Add(2 * time.Second); len(waiting) > 0 && time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			poll(freed)
		}
		if len(waiting) == 0 {
			return
		}
		cpus := slices.Sorted(maps.Keys(waiting))
		if round == 4 {
			t.Fatalf("no free of a marker seen on CPUs %v in %d rounds of 2s (markers %v)", cpus, round, markers)
		}
		t.Logf("no free of a marker seen on CPUs %v after %ds: another marker on each", cpus, 2*round)
		start(cpus)
	}
}

// FreeMarkers starts the markers of a wait for task frees: once the caller
// has seen sched_process_free of every task it returns, every task reaped
// before the call has been freed too, and a program's record of its free
// written before theirs.
//
// A task is freed by an RCU callback (delayed_put_task_struct), queued on
// the CPU that drops the task's last RCU reference: its reaper, or the CPU
// it last switched away from. One CPU's callbacks run in the order they
// were queued, but callbacks of different CPUs come in no order, and lazy
// callbacks (Linux 6.2 and later) are held up to 10 s. So FreeMarkers
// first runs the kernel's rcu_barrier through the rcutree.do_rcu_barrier
// knob (Linux 6.3 and later; before 6.2 no callback is lazy), then runs
// one marker process on each CPU this process may use, pinned there and
// reaped there, so that its free is queued behind every callback that CPU
// held. Only Linux 6.2, lazy and without the knob, is left to a 12 s wait.
func FreeMarkers(t testing.TB) []int32 {
	t.Helper()
	return slices.Collect(maps.Values(freeMarkers(t, nil)))
}

// freeMarkers is FreeMarkers on the given CPUs, or on every CPU this
// process may use when cpus is nil; it returns each marker's tid by CPU.
func freeMarkers(t testing.TB, cpus []int) map[int]int32 {
	t.Helper()
	if err := os.WriteFile("/sys/module/rcutree/parameters/do_rcu_barrier", []byte("1"), 0); err != nil && KernelAtLeast(t, 6, 2) {
		t.Logf("no rcu_barrier (%v): waiting 12s for the kernel's RCU callbacks", err)
		time.Sleep(12 * time.Second)
	}
	if cpus == nil {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			t.Fatal(err)
		}
		for cpu := 0; cpu < len(set)*64 && len(cpus) < set.Count(); cpu++ {
			if set.IsSet(cpu) {
				cpus = append(cpus, cpu)
			}
		}
	}
	pids := make(map[int]int32, len(cpus))
	for _, cpu := range cpus {
		pid, err := markerOn(cpu)
		if err != nil {
			t.Fatalf("free marker on CPU %d: %v", cpu, err)
		}
		pids[cpu] = pid
	}
	return pids
}

// markerOn runs /bin/true pinned to cpu and reaps it from a thread pinned
// there too, so that whichever of the two drops the marker's last RCU
// reference queues its free on cpu. The thread, pinned, is not handed
// back to the Go scheduler: it ends with its goroutine.
func markerOn(cpu int) (int32, error) {
	type result struct {
		pid int32
		err error
	}
	done := make(chan result)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			done <- result{err: err}
			return
		}
		cmd := exec.Command("/bin/true") // forked from this thread: pinned too
		err := cmd.Run()
		var pid int32
		if cmd.Process != nil {
			pid = int32(cmd.Process.Pid)
		}
		done <- result{pid, err}
	}()
	r := <-done
	return r.pid, r.err
}

// KernelAtLeast reports whether the running kernel's release is
// major.minor or later.
func KernelAtLeast(t testing.TB, major, minor int) bool {
	t.Helper()
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var maj, min int
	release := unix.ByteSliceToString(u.Release[:])
	if _, err := fmt.Sscanf(release, "%d.%d", &maj, &min); err != nil {
		t.Fatalf("kernel release %q: %v", release, err)
	}
	return maj > major || maj == major && min >= minor
}
