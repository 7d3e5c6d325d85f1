package schedlat

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// window is how long the workloads run between the two reads.
const window = 6 * time.Second

// workload is a latency-sensitive thread (1 ms asleep, 1 ms spinning) in
// one test cgroup and four spinners in another, or in the same one, all
// pinned to one CPU so that the contention is theirs.
type workload struct {
	a, b   string // the cgroups' directories; b == a for "same"
	idA    uint64
	idB    uint64
	parent uint64 // the latency helper's own cgroup
	pid    int    // the latency helper
	tid    int    // its worker
	cpu    int
	spinIn *testproc.Proc
}

func startWorkload(t *testing.T, same bool) *workload {
	t.Helper()
	w := &workload{cpu: runtime.NumCPU() - 1}
	// The latency thread alone in a cgroup of its own, a child of its
	// process's: the helper's runtime threads stay out of it.
	parent := testcg.Make(t, testcg.Default())
	w.a = filepath.Join(parent, "lat")
	if err := os.Mkdir(w.a, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w.a, "cgroup.type")); err == nil {
		// cgroup2 keeps single threads only in a threaded cgroup.
		if err := os.WriteFile(filepath.Join(w.a, "cgroup.type"), []byte("threaded"), 0); err != nil {
			t.Fatal(err)
		}
	}
	w.b = w.a
	spinners := parent
	if !same {
		w.b = testcg.Make(t, testcg.Default())
		spinners = w.b
	}
	w.idA, w.idB, w.parent = inode(t, w.a), inode(t, w.b), inode(t, parent)
	w.spinIn = testproc.StartIn(t, 4, spinners)
	for _, tid := range w.spinIn.Workers {
		pin(t, int(tid), w.cpu)
		if same {
			moveThread(t, w.a, int(tid))
		}
	}
	// Before 6.6 (CFS) a task runs at least the minimum granularity
	// before a tick preempts it (0.75 ms x (1 + log2 CPUs), 1.5 ms on two
	// CPUs, since 6.1 even past its slice): bursts of 4 ms run through
	// it, those of 1 ms seldom do.
	burst := time.Millisecond
	if !testproc.KernelAtLeast(t, 6, 6) {
		burst = 4 * time.Millisecond
	}
	cmd, tid := startLatency(t, burst)
	w.pid, w.tid = cmd.Process.Pid, tid
	testcg.Move(t, parent, w.pid)
	moveThread(t, w.a, w.tid)
	pin(t, w.tid, w.cpu)
	// The helpers' runtime threads go to another CPU, so they neither
	// preempt nor are preempted there.
	workers := append([]int32{int32(w.tid)}, w.spinIn.Workers...)
	for _, pid := range []int{w.pid, w.spinIn.PID} {
		for _, id := range threadsOf(t, pid) {
			if n, _ := strconv.Atoi(id); !slices.Contains(workers, int32(n)) && w.cpu > 0 {
				pin(t, n, 0)
			}
		}
	}
	// The test's own threads too.
	if w.cpu > 0 {
		for _, id := range threadsOf(t, os.Getpid()) {
			n, _ := strconv.Atoi(id)
			pin(t, n, 0)
		}
		t.Cleanup(func() {
			var all unix.CPUSet
			for c := range runtime.NumCPU() {
				all.Set(c)
			}
			for _, id := range threadsOf(t, os.Getpid()) {
				n, _ := strconv.Atoi(id)
				unix.SchedSetaffinity(n, &all)
			}
		})
	}
	boost(t, w.tid, workers)
	time.Sleep(200 * time.Millisecond) // let every thread switch once in its cgroup
	return w
}

// boost makes the workload's contention its own on a CPU that other
// tasks of a busy machine use too. The five threads share a v1 cpu cgroup
// of the highest weight, so that other tasks seldom run on their CPU while
// they are runnable, and the latency thread (tid) asks for a short slice
// (100 us; Linux 6.12 and later honour it), so that it is preempted at
// the first tick it runs through rather than after the default slice,
// longer than its 1 ms bursts (before 6.6, a low weight does that, past
// the minimum granularity; see startWorkload). On a
// pure cgroup2 machine (the kernel
// matrix's VMs, where nothing else runs) only the slice is asked for.
func boost(t *testing.T, tid int, threads []int32) {
	t.Helper()
	if !testcg.PureV2() {
		g := testcg.Make(t, "cpu")
		if err := os.WriteFile(filepath.Join(g, "cpu.shares"), []byte("262144"), 0); err != nil {
			t.Fatal(err)
		}
		for _, id := range threads {
			moveThread(t, g, int(id))
		}
	}
	attr := &unix.SchedAttr{Policy: unix.SCHED_NORMAL, Runtime: 100_000}
	if !testproc.KernelAtLeast(t, 6, 6) {
		// CFS (before 6.6) has no slice of a task's own but preempts
		// at a tick a task that ran past its share of the period: a
		// low weight makes that share short.
		attr.Nice = 19
	}
	if err := unix.SchedSetAttr(tid, attr, 0); err != nil {
		t.Logf("no short slice for the latency thread: %v", err)
	}
}

// moveThread moves one thread into the cgroup at dir: its v1 tasks file
// or its cgroup2 cgroup.threads.
func moveThread(t *testing.T, dir string, tid int) {
	t.Helper()
	file := filepath.Join(dir, "tasks")
	if _, err := os.Stat(file); err != nil {
		file = filepath.Join(dir, "cgroup.threads")
	}
	if err := os.WriteFile(file, []byte(strconv.Itoa(tid)), 0); err != nil {
		t.Fatalf("move thread %d into %s: %v", tid, dir, err)
	}
}

func inode(t *testing.T, dir string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// stop stops the latency helper and waits until every thread of it is
// stopped, so that each has switched away and its counters are final
// until cont.
func (w *workload) stop(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(w.pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, tid := range threadsOf(t, w.pid) {
		for !stopped(w.pid, tid) {
			if time.Now().After(deadline) {
				t.Fatalf("thread %s of %d did not stop", tid, w.pid)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func (w *workload) cont(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(w.pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

func threadsOf(t *testing.T, pid int) []string {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range ents {
		ids = append(ids, e.Name())
	}
	return ids
}

// stopped reports whether the thread is stopped and off its CPU: state t
// or T in /proc/<pid>/task/<tid>/stat, and not running.
func stopped(pid int, tid string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, tid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	return len(f) > 0 && (f[0] == "T" || f[0] == "t")
}

// helperStat sums the schedstat counters of the threads in the latency
// cgroup.
func (w *workload) helperStat(t *testing.T) schedstat.Stat {
	t.Helper()
	var sum schedstat.Stat
	for _, id := range testcg.Threads(t, w.a) {
		tid := strconv.Itoa(int(id))
		if !slices.Contains(threadsOf(t, w.pid), tid) {
			continue // a spinner, running on
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", w.pid, tid))
		if err != nil {
			t.Fatal(err)
		}
		st, err := schedstat.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		sum.RunNanoseconds += st.RunNanoseconds
		sum.WaitNanoseconds += st.WaitNanoseconds
		sum.Timeslices += st.Timeslices
	}
	return sum
}

type reading struct {
	stat   schedstat.Stat
	a, b   Counts
	pairAB uint64
	// byA are the preemptions of the latency cgroup by preemptor id.
	byA map[uint64]uint64
}

func (w *workload) read(t *testing.T, s *Source) reading {
	t.Helper()
	counts, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := s.Pairs()
	if err != nil {
		t.Fatal(err)
	}
	byA := map[uint64]uint64{}
	for p, n := range pairs {
		if p.Victim == w.idA {
			byA[p.Preemptor] = n
		}
	}
	return reading{stat: w.helperStat(t), a: counts[w.idA], b: counts[w.idB], pairAB: pairs[Pair{Victim: w.idA, Preemptor: w.idB}], byA: byA}
}

// measure fences a window with the helper stopped at both ends, and
// ends a window of tr at each.
func (w *workload) measure(t *testing.T, s *Source, tr *Tracker) (before, after reading) {
	t.Helper()
	w.stop(t)
	before = w.read(t, s)
	if err := tr.Sample(time.Now()); err != nil {
		t.Fatal(err)
	}
	w.cont(t)
	time.Sleep(window)
	w.stop(t)
	after = w.read(t, s)
	if err := tr.Sample(time.Now()); err != nil {
		t.Fatal(err)
	}
	w.cont(t)
	return before, after
}

func ratio(a, b uint64) float64 { return float64(a) / float64(b) }

// TestLatencyReal runs a latency-sensitive thread beside four spinners of
// another cgroup on one CPU. Over a window fenced by stopping its
// process, the histogram of its cgroup sums to the increase of its
// threads' run_delay and counts their timeslices, within 1%. Its
// preemptions name the spinners' cgroup as the main preemptor, at least
// 90% of those by the test's own tasks, and the spinners' caused count
// covers them.
func TestLatencyReal(t *testing.T) {
	_, s := openSource(t, Options{Latency: true, Preemption: true})
	w := startWorkload(t, false)
	tr := NewTracker(s, 1000)
	before, after := w.measure(t, s, tr)

	wait := after.stat.WaitNanoseconds - before.stat.WaitNanoseconds
	periods := after.stat.Timeslices - before.stat.Timeslices
	sum := after.a.WaitNanoseconds - before.a.WaitNanoseconds
	n := after.a.Waits - before.a.Waits
	var inBuckets uint64
	for i := range after.a.Buckets {
		inBuckets += after.a.Buckets[i] - before.a.Buckets[i]
	}
	t.Logf("window %v: run_delay +%.6fs over %d timeslices; histogram sum +%.6fs (ratio %.5f), count +%d (ratio %.5f, %d in buckets)",
		window, float64(wait)/1e9, periods, float64(sum)/1e9, ratio(sum, wait), n, ratio(n, periods), inBuckets)
	if periods < 100 || wait == 0 {
		t.Fatalf("the helper ran %d timeslices and waited %dns: no contention to measure", periods, wait)
	}
	if r := ratio(sum, wait); r < 0.99 || r > 1.01 {
		t.Errorf("histogram sum / run_delay increase = %.4f, want within 1%%", r)
	}
	if r := ratio(n, periods); r < 0.99 || r > 1.01 {
		t.Errorf("histogram count / timeslices = %.4f, want within 1%%", r)
	}
	if inBuckets != n {
		t.Errorf("buckets hold %d waits, count is %d", inBuckets, n)
	}

	pre := after.a.Preemptions() - before.a.Preemptions()
	byB := after.pairAB - before.pairAB
	caused := after.b.Caused - before.b.Caused
	kernel := after.a.Kernel - before.a.Kernel
	t.Logf("preemptions of the latency cgroup: %d (same %d, other %d, kernel %d, idle %d), by the spinners' cgroup %d (%.3f); the spinners caused %d",
		pre, after.a.Same-before.a.Same, after.a.Other-before.a.Other, kernel, after.a.Idle-before.a.Idle, byB, ratio(byB, pre), caused)
	if pre < 50 {
		t.Fatalf("only %d preemptions in %v", pre, window)
	}
	// Tasks of other cgroups (the machine's other users) and kernel
	// threads preempt on every CPU; they are named as such. Of the rest,
	// the preemptions by the test's own tasks, the spinners' must be 90%,
	// and the spinners' cgroup the main preemptor.
	var outside, top uint64
	var main uint64
	for id, n := range after.byA {
		d := n - before.byA[id]
		if id != w.idB && id != w.idA && id != w.parent && id != 0 {
			outside += d
			t.Logf("preempted by another cgroup (id %d): %d", id, d)
		}
		if id != 0 && d > top {
			top, main = d, id
		}
	}
	own := pre - kernel - outside
	if r := ratio(byB, own); r < 0.9 {
		t.Errorf("%.3f of the %d preemptions by the test's tasks are by the spinners' cgroup, want at least 0.9", r, own)
	}
	if main != w.idB {
		t.Errorf("main preemptor is cgroup id %d (%d preemptions), not the spinners' %d (%d)", main, top, w.idB, byB)
	}
	if caused < byB {
		t.Errorf("the spinners' cgroup caused %d preemptions, fewer than the %d it made in the latency cgroup", caused, byB)
	}
	// The tracker's window is the same interval: the pair shows there
	// with the same count.
	win := tr.Window()
	i := slices.IndexFunc(win.Pairs, func(p PairCount) bool { return p.Pair == Pair{Victim: w.idA, Preemptor: w.idB} })
	if i < 0 || win.Pairs[i].Preemptions != byB {
		t.Errorf("tracker window %v-%v: pair (latency, spinners) at %d of %d pairs, want %d preemptions", win.Start, win.End, i, len(win.Pairs), byB)
	} else {
		t.Logf("tracker window: the pair is number %d of %d pairs (%d preemptions in all)", i+1, win.Distinct, win.Total)
	}
}

// TestPreemptionSameReal puts the spinners in the latency thread's
// cgroup: its preemptions are then by the same cgroup, at least 90%.
func TestPreemptionSameReal(t *testing.T) {
	_, s := openSource(t, Options{Preemption: true})
	w := startWorkload(t, true)
	before, after := w.measure(t, s, NewTracker(s, 0))
	pre := after.a.Preemptions() - before.a.Preemptions()
	same := after.a.Same - before.a.Same
	kernel := after.a.Kernel - before.a.Kernel
	t.Logf("preemptions in the cgroup: %d, by the same cgroup %d (%.3f; other %d, kernel %d, idle %d)",
		pre, same, ratio(same, pre), after.a.Other-before.a.Other, kernel, after.a.Idle-before.a.Idle)
	if pre < 50 {
		t.Fatalf("only %d preemptions in %v", pre, window)
	}
	var outside uint64
	for id, n := range after.byA {
		if id != w.idA && id != w.parent && id != 0 {
			outside += n - before.byA[id]
		}
	}
	if r := ratio(same, pre-kernel-outside); r < 0.9 {
		t.Errorf("%.3f of the %d preemptions by the test's tasks are by the same cgroup, want at least 0.9", r, pre-kernel-outside)
	}
	if after.pairAB != before.pairAB {
		t.Errorf("a pair of the cgroup with itself was counted: %d", after.pairAB-before.pairAB)
	}
}
