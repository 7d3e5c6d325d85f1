package collector

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/schedstat"
)

// fakeProc writes /proc/<tid>/stat, status and cmdline under root.
func fakeProc(t *testing.T, root string, tid, tgid int, comm string, start int, cmdline string) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(tid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Fields 3 to 21, then starttime (22) and a few more.
	stat := strconv.Itoa(tid) + " (" + comm + ") S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 " + strconv.Itoa(start) + " 0 0\n"
	status := "Name:\t" + comm + "\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t" + strconv.Itoa(tgid) + "\nNgid:\t0\n"
	for name, s := range map[string]string{"stat": stat, "status": status, "cmdline": cmdline} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNewCgroupTasks names tasks from a procfs tree: threads grouped by
// process, names made label values, a long command line cut, and a task
// whose id now holds another task (another start time) or that is gone
// left unnamed, under process 0.
func TestNewCgroupTasks(t *testing.T) {
	root := t.TempDir()
	long := strings.Repeat("x", MaxCmdline+50)
	fakeProc(t, root, 100, 100, "java", 50, "java\x00-jar\x00app.jar\x00")
	fakeProc(t, root, 101, 100, "GC\x1b[31m", 51, "")
	fakeProc(t, root, 200, 200, "bad\xffname", 60, long)
	fakeProc(t, root, 300, 300, "newcomer", 999, "newcomer\x00")
	st := func(run uint64) schedstat.Stat {
		return schedstat.Stat{RunNanoseconds: run, WaitNanoseconds: 2 * run, Timeslices: 1}
	}
	tasks := []container.TaskStats{
		{TID: 101, StartTime: 51, Stat: st(2), CgroupID: 9, CgroupPath: "/app/sub"},
		{TID: 100, StartTime: 50, Stat: st(1), CgroupID: 8, CgroupPath: "/app"},
		{TID: 200, StartTime: 60, Stat: st(3), CgroupID: 8, CgroupPath: "/app"},
		{TID: 300, StartTime: 61, Stat: st(4), CgroupID: 8, CgroupPath: "/app"}, // reused since
		{TID: 400, StartTime: 70, Stat: st(5), CgroupID: 8, CgroupPath: "/app"}, // gone
	}
	at := time.Unix(1000, 0)
	got := NewCgroupTasks(root, 8, "/app", at, tasks)
	th := func(tid int32, start uint64, comm, cg string, run uint64) Thread {
		return Thread{TID: tid, StartTicks: start, Comm: comm, Cgroup: cg, RunNanoseconds: run, RunqueueNanoseconds: 2 * run, Timeslices: 1}
	}
	want := &CgroupTasks{ID: 8, Path: "/app", Time: at, Processes: []Process{
		{PID: 0, RunNanoseconds: 9, RunqueueNanoseconds: 18, Timeslices: 2,
			Threads: []Thread{th(300, 61, "", "/app", 4), th(400, 70, "", "/app", 5)}},
		{PID: 100, StartTicks: 50, Comm: "java", Cmdline: "java -jar app.jar", RunNanoseconds: 3, RunqueueNanoseconds: 6, Timeslices: 2,
			Threads: []Thread{th(100, 50, "java", "/app", 1), th(101, 51, "GC\x1b[31m", "/app/sub", 2)}},
		{PID: 200, StartTicks: 60, Comm: `bad\xffname`, Cmdline: long[:MaxCmdline], CmdlineTruncated: true, RunNanoseconds: 3, RunqueueNanoseconds: 6, Timeslices: 1,
			Threads: []Thread{th(200, 60, `bad\xffname`, "/app", 3)}},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}

	// Past MaxTasks, those that waited least are left out, and counted.
	many := make([]container.TaskStats, MaxTasks+3)
	for i := range many {
		many[i] = container.TaskStats{TID: int32(1000 + i), StartTime: 1, Stat: schedstat.Stat{WaitNanoseconds: uint64(i)}}
	}
	big := NewCgroupTasks(root, 8, "/app", at, many)
	if big.LeftOut != 3 || len(big.Processes) != 1 || len(big.Processes[0].Threads) != MaxTasks || big.Processes[0].Threads[0].TID != 1003 {
		t.Errorf("left out %d, %d processes", big.LeftOut, len(big.Processes))
	}
}

// TestPathOfLabel inverts cgroupfs.LabelValue.
func TestPathOfLabel(t *testing.T) {
	for _, p := range []string{"/", "/kubepods/pod1/abc", `/a\b`, "/bad\xff\xfe", `/x\\y`, "/ünïcode"} {
		got, err := PathOfLabel(cgroupfs.LabelValue(p))
		if err != nil || got != p {
			t.Errorf("PathOfLabel(LabelValue(%q)) = %q, %v", p, got, err)
		}
	}
	for _, bad := range []string{"", "a/b", `/a\`, `/a\q`, `/a\xz1`} {
		if _, err := PathOfLabel(bad); err == nil {
			t.Errorf("PathOfLabel(%q) took it", bad)
		}
	}
}

// FuzzPathOfLabel checks that every label value goes back to its path.
func FuzzPathOfLabel(f *testing.F) {
	for _, s := range []string{"/", `/a\b`, "/\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		p = "/" + p
		if got, err := PathOfLabel(cgroupfs.LabelValue(p)); err != nil || got != p {
			t.Errorf("PathOfLabel(LabelValue(%q)) = %q, %v", p, got, err)
		}
	})
}

// TestFreshViewSharesPasses sends requests with views at once while a
// pass runs: they share the next pass, and each view reads the table.
func TestFreshViewSharesPasses(t *testing.T) {
	tree := synth.NewTree("/", "/a")
	tree.Set("/a", 1)
	l := &slowLister{tree: tree, delay: 30 * time.Millisecond}
	p := startPoller(t, l, time.Hour)
	if _, err := p.Fresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := l.calls.Load()
	const n = 20
	var wg sync.WaitGroup
	counts := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var tasks []container.TaskStats
			_, err := p.FreshView(context.Background(), func(tb *container.Table) {
				id, _ := tb.CgroupID("/a")
				_, tasks, _ = tb.CgroupTasks(id, nil)
			})
			if err != nil {
				t.Error(err)
			}
			counts[i] = len(tasks)
		}()
	}
	wg.Wait()
	for i, c := range counts {
		if c != 1 {
			t.Errorf("view %d saw %d tasks of /a, want 1", i, c)
		}
	}
	if ran := l.calls.Load() - before; ran > 3 {
		t.Errorf("%d requests ran %d passes", n, ran)
	}
}
