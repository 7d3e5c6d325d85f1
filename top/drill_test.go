package top

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/collector"
)

// answer makes one tasks answer at second sec, of processes given as
// pid -> threads (tid, start, run and wait nanoseconds).
func answer(sec int, procs ...collector.Process) *collector.CgroupTasks {
	return &collector.CgroupTasks{ID: 7, Path: "/app", Time: time.Unix(int64(sec), 0), Processes: procs}
}

func proc(pid int32, start uint64, comm string, threads ...collector.Thread) collector.Process {
	return collector.Process{PID: pid, StartTicks: start, Comm: comm, Cmdline: comm + " --serve", Threads: threads}
}

func thread(tid int32, start uint64, comm string, run, wait uint64) collector.Thread {
	return collector.Thread{TID: tid, StartTicks: start, Comm: comm, Cgroup: "/app", RunNanoseconds: run, RunqueueNanoseconds: wait}
}

// TestTaskRows takes rates per thread between two answers, sums them per
// process, marks what exited, and never takes a reused id for its old
// task.
func TestTaskRows(t *testing.T) {
	prev := TaskSample{answer(10,
		proc(100, 5, "java", thread(100, 5, "java", 1e9, 1e9), thread(101, 5, "GC", 2e9, 3e9), thread(102, 6, "worker", 0, 0)),
		proc(200, 7, "sidecar", thread(200, 7, "sidecar", 0, 0)),
	)}
	cur := TaskSample{answer(12,
		// 102 exited and its id went to a new thread of the same process.
		proc(100, 5, "java", thread(100, 5, "java", 2e9, 1e9), thread(101, 5, "GC", 3e9, 7e9), thread(102, 90, "worker", 5e9, 5e9)),
		// 200 exited; 300 is new.
		proc(300, 91, "batch", thread(300, 91, "batch", 1e9, 1e9)),
	)}
	rows := TaskRows(prev, cur)
	byKey := map[string]Row{}
	for _, r := range rows {
		byKey[r.Key()] = r
	}
	java := byKey["p:100:5"]
	if !java.Known || java.Run != 1 || java.Wait != 2 || java.Tasks != 3 || java.Exited {
		t.Errorf("java: %+v; want run 1/s, wait 2/s from its two old threads, 3 threads", java)
	}
	if java.Label != "100 java --serve" {
		t.Errorf("label %q", java.Label)
	}
	threads := map[string]Row{}
	for _, th := range java.Threads {
		threads[th.Key()] = th
	}
	if gc := threads["t:101:5"]; !gc.Known || gc.Run != 0.5 || gc.Wait != 2 || gc.Label != "101 GC" {
		t.Errorf("GC thread: %+v", gc)
	}
	if reused := threads["t:102:90"]; reused.Known || reused.Exited {
		t.Errorf("the thread that took id 102 has rates or is exited: %+v", reused)
	}
	if old := threads["t:102:6"]; !old.Exited || old.Known {
		t.Errorf("the thread that had id 102 is not marked exited: %+v", old)
	}
	if sidecar := byKey["p:200:7"]; !sidecar.Exited || len(sidecar.Threads) != 1 || !sidecar.Threads[0].Exited {
		t.Errorf("sidecar: %+v; want it marked exited", sidecar)
	}
	if batch := byKey["p:300:91"]; batch.Known || batch.Exited {
		t.Errorf("batch: %+v; want it new, without rates", batch)
	}
	if len(rows) != 3 {
		t.Errorf("%d rows", len(rows))
	}
	// The next answer: the exited are gone, the new have rates.
	next := TaskRows(cur, TaskSample{answer(13, proc(300, 91, "batch", thread(300, 91, "batch", 2e9, 1e9)))})
	if len(next) != 2 {
		t.Errorf("rows a refresh later: %+v", next)
	}
	for _, r := range next {
		if r.PID == 200 {
			t.Errorf("the sidecar is shown a second refresh after it exited")
		}
	}
	if th, ok := ThreadsOf(rows, 100, 5); !ok || len(th) != 4 {
		t.Errorf("ThreadsOf(100): %d rows, %v; want 3 live and the exited one", len(th), ok)
	}
}

// TestCarry keeps what an exited row did last.
func TestCarry(t *testing.T) {
	last := []Row{{PID: 1, Start: 2, Known: true, Run: 0.5, Wait: 1.5}}
	rows := []Row{{PID: 1, Start: 2, Exited: true}, {PID: 3, Start: 4}}
	carry(rows, last)
	if d := cmp.Diff([]Row{{PID: 1, Start: 2, Exited: true, Known: true, Run: 0.5, Wait: 1.5}, {PID: 3, Start: 4}}, rows); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestDrillKeys opens a row and a process, moves, and goes back.
func TestDrillKeys(t *testing.T) {
	st := State{View: ViewCgroups}
	rows := []Row{{Label: "/a", IDs: []string{"/a"}, Known: true, Wait: 1}, {Label: "/b", IDs: []string{"/b"}, Known: true, Wait: 2}}
	scr := st.Screen(rows, "x", time.Second, time.Now())
	if scr.Selected != 0 || scr.Rows[0].Label != "/b" {
		t.Fatalf("selected %d of %+v", scr.Selected, scr.Rows)
	}
	if got := st.Input([]byte("\x1b[B")); len(got) != 1 || got[0] != Down {
		t.Fatalf("arrow down: %v", got)
	}
	st.Move(scr, 1)
	scr = st.Screen(rows, "x", time.Second, time.Now())
	if scr.Selected != 1 || st.Selected != "/a" {
		t.Fatalf("after down: %d %q", scr.Selected, st.Selected)
	}
	st.Filter = "a"
	if a := st.Key('\r'); a != Open || !st.Open(scr) {
		t.Fatal("Enter did not open /a")
	}
	if tg := st.Target(); tg == nil || tg.Threads || tg.IDs[0] != "/a" || st.Filter != "" {
		t.Fatalf("target %+v, filter %q", tg, st.Filter)
	}
	if a := st.Key('p'); a != None {
		t.Errorf("p in a drill-down: %v", a)
	}
	procs := []Row{{PID: 9, Start: 1, Comm: "db", Label: "9 db", Known: true}}
	pscr := st.Screen(procs, "x", time.Second, time.Now())
	if pscr.View != ViewProcesses || pscr.Node == nil || pscr.Scope != "/a" {
		t.Fatalf("process screen: %+v", pscr)
	}
	if !st.Open(pscr) || !st.Target().Threads || st.Target().PID != 9 {
		t.Fatalf("process not opened: %+v", st.Target())
	}
	tscr := st.Screen([]Row{{TID: 10, PID: 9, Label: "10 db"}}, "x", time.Second, time.Now())
	if tscr.View != ViewThreads || st.Open(tscr) {
		t.Fatal("a thread opened something")
	}
	if got := st.Input([]byte{0x7f}); len(got) != 1 || got[0] != Back || !st.Back() {
		t.Fatalf("Backspace: %v", got)
	}
	if got := st.Input([]byte{0x1b}); len(got) != 1 || got[0] != Back || !st.Back() {
		t.Fatalf("Esc: %v", got)
	}
	if st.Target() != nil || st.Filter != "a" || st.Selected != "/a" {
		t.Errorf("back at the cgroups: target %+v, filter %q, selected %q", st.Target(), st.Filter, st.Selected)
	}
	if got := st.Input([]byte{0x7f}); len(got) != 0 {
		t.Errorf("Backspace at the top: %v", got)
	}
}

// fakeTasks is fakeSource with tasks: /starved has a process whose
// thread 21 exits after the third answer.
type fakeTasks struct {
	fakeSource
	mu    sync.Mutex
	asked []string
	n     int
}

func (f *fakeTasks) Tasks(ctx context.Context, cgroup string) (*collector.CgroupTasks, error) {
	f.mu.Lock()
	f.asked = append(f.asked, cgroup)
	f.mu.Unlock()
	f.n++
	n := uint64(f.n)
	threads := []collector.Thread{thread(20, 1, "main", n*1e8, n*2e8), thread(22, 1, "pool", n*1e8, n*9e8)}
	if f.n <= 3 {
		threads = append(threads, thread(21, 1, "doomed", n*3e8, n*3e8))
	}
	return answer(f.n, proc(20, 1, "app", threads...)), nil
}

// TestLiveDrillsDown opens the starved cgroup with Enter, its process
// with Enter again, sees a thread exit and stay one refresh, marked, and
// goes back with Backspace and Esc.
func TestLiveDrillsDown(t *testing.T) {
	src := &fakeTasks{}
	in, keys := io.Pipe()
	rec := &screenRecorder{frames: make(chan string, 100)}
	done := make(chan error, 1)
	go func() {
		done <- Live(context.Background(), src, State{View: ViewCgroups}, Options{Source: "fake", Interval: 40 * time.Millisecond},
			Terminal{In: in, Out: rec, Size: func() (int, int) { return 120, 30 }})
	}()
	rec.await(t, "the starved cgroup first", func(f string) bool { return before(f, "/starved", "/busy") })
	keys.Write([]byte("\r"))
	rec.await(t, "its processes", func(f string) bool {
		return strings.Contains(f, "view: processes") && strings.Contains(f, "20 app --serve") && !strings.Contains(f, "collecting")
	})
	keys.Write([]byte("\r"))
	rec.await(t, "the threads, pool first by wait", func(f string) bool {
		return strings.Contains(f, "view: threads") && before(f, "22 pool", "20 main")
	})
	rec.await(t, "the exited thread marked", func(f string) bool { return strings.Contains(f, "21 doomed (exited)") })
	rec.await(t, "the exited thread gone a refresh later", func(f string) bool {
		return strings.Contains(f, "view: threads") && !strings.Contains(f, "doomed")
	})
	keys.Write([]byte{0x7f})
	rec.await(t, "the processes again", func(f string) bool { return strings.Contains(f, "view: processes") })
	keys.Write([]byte{0x1b})
	rec.await(t, "the cgroups again", func(f string) bool { return strings.Contains(f, "view: cgroups") && strings.Contains(f, "/busy") })
	keys.Write([]byte("q"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	for _, a := range src.asked {
		if a != "/starved" {
			t.Errorf("asked for the tasks of %q", a)
		}
	}
}

// TestProcessLabelsKeepTheirID cuts a long command line at its end, so the
// id stays, and keeps the exited mark.
func TestProcessLabelsKeepTheirID(t *testing.T) {
	s := &Screen{View: ViewProcesses, Selected: -1, Rows: []Row{
		{PID: 4242, Label: "4242 /usr/lib/jvm/java-21/bin/java -Xmx8g -jar /srv/app/very-long-name.jar --port=8080", Known: true},
		{PID: 4243, Label: "4243 /usr/bin/sidecar --with --many --arguments --that --go --on --and --on", Exited: true},
	}}
	lines := s.Table(0)
	if !strings.HasPrefix(lines[1], "4242 /usr/lib/jvm") || !strings.Contains(lines[1], "...") {
		t.Errorf("%q", lines[1])
	}
	if !strings.HasPrefix(lines[2], "4243 /usr/bin/sidecar") || !strings.Contains(lines[2], "... (exited)") {
		t.Errorf("%q", lines[2])
	}
}
