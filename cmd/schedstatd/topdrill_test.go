package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/schedstat"
)

// kernelTrace reads the schedstat of every thread of procs every few
// milliseconds, with the time of each read, until stopped.
type kernelTrace struct {
	mu    sync.Mutex
	reads []kernelRead
	stop  chan struct{}
	done  chan struct{}
}

type kernelRead struct {
	at    time.Time
	stats map[int32]schedstat.Stat
}

func traceKernel(t *testing.T, procs ...*testproc.Proc) *kernelTrace {
	t.Helper()
	k := &kernelTrace{stop: make(chan struct{}), done: make(chan struct{})}
	var tids []struct {
		pid int
		tid int32
	}
	for _, p := range procs {
		for _, tid := range p.Threads(t) {
			tids = append(tids, struct {
				pid int
				tid int32
			}{p.PID, tid})
		}
	}
	go func() {
		defer close(k.done)
		for {
			r := kernelRead{stats: map[int32]schedstat.Stat{}}
			r.at = time.Now()
			for _, x := range tids {
				b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", x.pid, x.tid))
				if err != nil {
					continue
				}
				if st, err := schedstat.Parse(b); err == nil {
					r.stats[x.tid] = st
				}
			}
			// The read's time is the middle of the reads.
			r.at = r.at.Add(time.Since(r.at) / 2)
			k.mu.Lock()
			k.reads = append(k.reads, r)
			k.mu.Unlock()
			select {
			case <-k.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(k.end)
	return k
}

func (k *kernelTrace) end() {
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	<-k.done
}

// at returns thread tid's run and wait nanoseconds at time x, linear
// between the reads around it.
func (k *kernelTrace) at(t *testing.T, tid int32, x time.Time) (run, wait float64) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := 1; i < len(k.reads); i++ {
		a, b := k.reads[i-1], k.reads[i]
		if b.at.Before(x) {
			continue
		}
		sa, oka := a.stats[tid]
		sb, okb := b.stats[tid]
		if !oka || !okb || a.at.After(x) {
			break
		}
		f := float64(x.Sub(a.at)) / float64(b.at.Sub(a.at))
		run = float64(sa.RunNanoseconds) + f*float64(sb.RunNanoseconds-sa.RunNanoseconds)
		wait = float64(sa.WaitNanoseconds) + f*float64(sb.WaitNanoseconds-sa.WaitNanoseconds)
		return run, wait
	}
	t.Fatalf("no reads of thread %d around %s", tid, x.Format(time.StampMicro))
	return 0, 0
}

// rates returns the run and wait seconds per second of the threads tids
// between two times, by the kernel's own counters.
func (k *kernelTrace) rates(t *testing.T, tids []int32, from, to time.Time) (run, wait float64) {
	t.Helper()
	sec := to.Sub(from).Seconds()
	for _, tid := range tids {
		r1, w1 := k.at(t, tid, from)
		r2, w2 := k.at(t, tid, to)
		run += (r2 - r1) / 1e9 / sec
		wait += (w2 - w1) / 1e9 / sec
	}
	return run, wait
}

// comparison is top's run and wait rates of some threads and the
// kernel's over the same window.
type comparison struct{ run, wait, kernelRun, kernelWait float64 }

// compare sums top's rates of the rows (threads) the trace follows, and
// the kernel's between from and to.
func (k *kernelTrace) compare(t *testing.T, rows []drillJSONRow, from, to time.Time) comparison {
	t.Helper()
	var c comparison
	k.mu.Lock()
	traced := k.reads[0].stats
	k.mu.Unlock()
	for _, r := range rows {
		if _, ok := traced[r.TID]; !ok || r.Run == nil || r.Wait == nil {
			continue
		}
		kr, kw := k.rates(t, []int32{r.TID}, from, to)
		c.run, c.wait = c.run+*r.Run, c.wait+*r.Wait
		c.kernelRun, c.kernelWait = c.kernelRun+kr, c.kernelWait+kw
	}
	return c
}

// check compares c's share of total, by top and by the kernel, within
// 2 %, and total's two sums within 10 %.
func (c comparison) check(t *testing.T, what string, total comparison) {
	t.Helper()
	t.Logf("%s: run %.4f/s of %.4f/s (kernel %.4f/s of %.4f/s), wait %.4f/s of %.4f/s (kernel %.4f/s of %.4f/s)",
		what, c.run, total.run, c.kernelRun, total.kernelRun, c.wait, total.wait, c.kernelWait, total.kernelWait)
	if !within(c.run/total.run, c.kernelRun/total.kernelRun) || !within(c.wait/total.wait, c.kernelWait/total.kernelWait) {
		t.Errorf("%s: shares of run %.4f and wait %.4f; the kernel's %.4f and %.4f: more than 2 %% apart", what,
			c.run/total.run, c.wait/total.wait, c.kernelRun/total.kernelRun, c.kernelWait/total.kernelWait)
	}
	for _, r := range [][2]float64{{total.run, total.kernelRun}, {total.wait, total.kernelWait}} {
		if q := r[0] / r[1]; q < 0.9 || q > 1.1 {
			t.Errorf("%s: totals %.4f/s by top and %.4f/s by the kernel", what, r[0], r[1])
		}
	}
}

// runTopWithin is runTop with a time limit of its own.
func runTopWithin(t *testing.T, limit time.Duration, args ...string) topRun {
	t.Helper()
	bin := binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"top"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := topRun{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("top %v did not finish within %s", args, limit)
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("top %v: %v", args, err)
	}
	return r
}

// drillJSONRow is what the drill-down tests read of a JSON row.
type drillJSONRow struct {
	Name    string         `json:"name"`
	PID     int32          `json:"pid"`
	TID     int32          `json:"tid"`
	Comm    string         `json:"comm"`
	Run     *float64       `json:"run_seconds_per_second"`
	Wait    *float64       `json:"runqueue_seconds_per_second"`
	Exited  bool           `json:"exited"`
	Threads []drillJSONRow `json:"threads"`
}

type drillJSON struct {
	Time     time.Time      `json:"time"`
	Interval float64        `json:"interval_seconds"`
	View     string         `json:"view"`
	Scope    string         `json:"scope"`
	Rows     []drillJSONRow `json:"rows"`
}

// TestTopOnceDrillDown runs `top --once --output=json --cgroup=...`
// through the daemon (by the cgroup's kernel id) and with passes of its
// own (by its path), while the test reads the workload's threads'
// /proc/<pid>/task/<tid>/schedstat every few milliseconds: the processes
// come in wait order, their rates and those of the victim's threads
// (--pid) match the kernel's over the same window within 2 %, and the
// threads carry their names.
func TestTopOnceDrillDown(t *testing.T) {
	w := startDrillWorkload(t)
	// The daemon as it ships, not the race detector's build: its passes
	// over the node's threads are several times shorter, and with them
	// the doubt about when in a pass each thread was read.
	d := startBinary(t, plainBinary(t), nil, "--collect.interval=200ms", "--state.path=")
	for _, tc := range []struct {
		name string
		args []string
		// interval is long enough that where in a pass each thread was
		// read (a pass over this node's ~20,000 threads takes tens of
		// milliseconds, more on a loaded machine) moves a rate by less
		// than 1 %; rates says whether they are compared.
		interval string
		rates    bool
	}{
		{"daemon", []string{"--from=http://" + d.addr + "/metrics", "--cgroup=" + strconv.FormatUint(w.inode, 10)}, "--interval=10s", true},
		// Passes of its own, in the race-detector build, over every
		// thread of the node: order and names.
		{"local passes", []string{"--cgroup=" + w.id}, "--interval=2s", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scrape(t, http.DefaultClient, "http://"+d.addr+"/metrics") // after the daemon's first pass
			k := traceKernel(t, w.procs()...)
			r := runTopWithin(t, 2*time.Minute, append([]string{"--output=json", tc.interval}, tc.args...)...)
			pr := runTopWithin(t, 2*time.Minute, append([]string{"--output=json", tc.interval, "--pid=" + strconv.Itoa(w.victim.PID)}, tc.args...)...)
			k.end()
			if r.code != 0 || pr.code != 0 {
				t.Fatalf("exit %d and %d: %s %s", r.code, pr.code, r.stderr, pr.stderr)
			}
			var out, threads drillJSON
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
				t.Fatalf("%v:\n%s", err, r.stdout)
			}
			if err := json.Unmarshal([]byte(pr.stdout), &threads); err != nil {
				t.Fatalf("%v:\n%s", err, pr.stdout)
			}
			if out.View != "processes" || threads.View != "threads" || !strings.Contains(out.Scope, w.id) {
				t.Errorf("views %q and %q, scope %q", out.View, threads.View, out.Scope)
			}
			var pids []int
			for _, row := range out.Rows {
				pids = append(pids, int(row.PID))
			}
			if want := []int{w.spin.PID, w.victim.PID, w.idle.PID}; fmt.Sprint(pids) != fmt.Sprint(want) {
				t.Fatalf("processes %v, want %v (spin, victim, idle) in wait order:\n%s", pids, want, r.stdout)
			}
			names := map[int32]drillJSONRow{}
			for _, th := range threads.Rows {
				names[th.TID] = th
			}
			for i, tid := range w.victim.Workers {
				th, ok := names[tid]
				if want := "victim" + strconv.Itoa(i); !ok || th.Comm != want || !strings.Contains(th.Name, want) {
					t.Errorf("thread %d: %+v, want the name %s", tid, th, want)
				}
			}
			if !tc.rates {
				return
			}
			// Where in its pass a thread was read is known only to tens
			// of milliseconds (the answer's time is the pass's end), which
			// stretches or shrinks the window of all the threads alike:
			// rates are compared as shares of the cgroup's (the
			// process's) total, by top and by the kernel, which that
			// cancels; the totals themselves must agree within 10 %.
			from := out.Time.Add(-time.Duration(out.Interval * float64(time.Second)))
			var all []drillJSONRow
			for _, row := range out.Rows {
				all = append(all, row.Threads...)
			}
			total := k.compare(t, all, from, out.Time)
			for i, p := range []*testproc.Proc{w.spin, w.victim} {
				c := k.compare(t, out.Rows[i].Threads, from, out.Time)
				c.check(t, "process "+strconv.Itoa(p.PID), total)
			}
			tfrom := threads.Time.Add(-time.Duration(threads.Interval * float64(time.Second)))
			ptotal := k.compare(t, threads.Rows, tfrom, threads.Time)
			for _, tid := range w.victim.Workers {
				c := k.compare(t, []drillJSONRow{names[tid]}, tfrom, threads.Time)
				c.check(t, "thread "+strconv.Itoa(int(tid)), ptotal)
			}
		})
	}
}

// TestTopDrillDownInTmux drives the live view with keys in a real
// terminal: Enter on the test cgroup's row opens its processes, in wait
// order; Enter on the victim opens its threads, named; Backspace and Esc
// go back; q quits with status 0.
func TestTopDrillDownInTmux(t *testing.T) {
	x := newTmux(t)
	w := startDrillWorkload(t)
	d := startDaemon(t, "--collect.interval=200ms")
	exitFile := filepath.Join(t.TempDir(), "exit")
	script := strconv.Quote(binary(t)) + " top --from=http://" + d.addr + "/metrics --interval=1s --view=cgroups; echo $? > " + strconv.Quote(exitFile)
	x.run(false, "new-session", "-d", "-s", "top", "-x", "200", "-y", "40", "/bin/sh", "-c", script)
	send := func(keys ...string) {
		t.Helper()
		x.run(false, append([]string{"send-keys", "-t", "top"}, keys...)...)
	}
	x.await("rates", func(_ []string, s string) bool { return strings.Contains(s, "node  run ") })
	send("/")
	x.await("the filter prompt", func(_ []string, s string) bool { return strings.Contains(s, "filter: _") })
	send("-l", w.id[1:])
	send("Enter")
	x.await("the test cgroup alone", func(l []string, s string) bool {
		return strings.Contains(s, "1 of ") && rowIndex(l, w.id) >= 0
	})

	send("Enter")
	pid := func(p *testproc.Proc) string { return strconv.Itoa(p.PID) }
	lines := x.await("its processes, with rates, in wait order", func(l []string, s string) bool {
		i, j, k := rowIndex(l, pid(w.spin)), rowIndex(l, pid(w.victim)), rowIndex(l, pid(w.idle))
		return strings.Contains(s, "view: processes") && strings.Contains(s, "PID COMMAND") &&
			!strings.Contains(s, "collecting") && i >= 0 && i < j && j < k
	})
	t.Logf("processes:\n%s", strings.Join(lines, "\n"))
	if !strings.Contains(strings.Join(lines, "\n"), w.id+"  run ") {
		t.Errorf("no line of the cgroup's totals:\n%s", strings.Join(lines, "\n"))
	}

	// The victim, by a filter on its id, then its threads.
	send("/")
	send("-l", pid(w.victim))
	send("Enter")
	x.await("the victim alone", func(l []string, s string) bool {
		return strings.Contains(s, "1 of 3 rows") && rowIndex(l, pid(w.victim)) >= 0
	})
	send("Enter")
	lines = x.await("the victim's threads, named, with rates", func(l []string, s string) bool {
		if !strings.Contains(s, "view: threads") || !strings.Contains(s, "TID THREAD") || strings.Contains(s, "collecting") {
			return false
		}
		for i, tid := range w.victim.Workers {
			r := rowIndex(l, strconv.Itoa(int(tid)))
			if r < 0 || strings.Fields(l[r])[1] != "victim"+strconv.Itoa(i) {
				return false
			}
		}
		return true
	})
	t.Logf("threads:\n%s", strings.Join(lines, "\n"))

	send("BSpace")
	x.await("the processes again, filtered as they were", func(_ []string, s string) bool {
		return strings.Contains(s, "view: processes") && strings.Contains(s, "1 of 3 rows")
	})
	send("Escape")
	x.await("the cgroups again, filtered as they were", func(l []string, s string) bool {
		return strings.Contains(s, "view: cgroups") && strings.Contains(s, "1 of ") && rowIndex(l, w.id) >= 0
	})
	send("q")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := x.run(true, "has-session", "-t", "top"); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("q did not end the session:\n%s", strings.Join(x.pane(), "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if b, err := os.ReadFile(exitFile); err != nil || strings.TrimSpace(string(b)) != "0" {
		t.Errorf("top's exit status: %q, %v; want 0", b, err)
	}
}
