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
// freed and poll has reported it: it calls poll, every 2 ms for up to 5 s,
// until poll has called freed with the tid of every marker FreeMarkers
// started. poll reports the tasks whose sched_process_free it has seen
// since its last call, typically the records a program wrote there, read
// in the order they were written.
func AwaitFrees(t testing.TB, poll func(freed func(tid int32))) {
	t.Helper()
	time.Sleep(10 * time.Millisecond) // a reaped task may not have switched away yet
	left := make(map[int32]bool)
	for _, tid := range FreeMarkers(t) {
		left[tid] = true
	}
	freed := func(tid int32) { delete(left, tid) }
	for deadline := time.Now().Add(5 * time.Second); len(left) > 0; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no free of markers %v seen after 5s", slices.Sorted(maps.Keys(left)))
		}
		poll(freed)
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
	if err := os.WriteFile("/sys/module/rcutree/parameters/do_rcu_barrier", []byte("1"), 0); err != nil && KernelAtLeast(t, 6, 2) {
		t.Logf("no rcu_barrier (%v): waiting 12s for the kernel's RCU callbacks", err)
		time.Sleep(12 * time.Second)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	var pids []int32
	for cpu := 0; cpu < len(set)*64 && len(pids) < set.Count(); cpu++ {
		if !set.IsSet(cpu) {
			continue
		}
		pid, err := markerOn(cpu)
		if err != nil {
			t.Fatalf("free marker on CPU %d: %v", cpu, err)
		}
		pids = append(pids, pid)
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
