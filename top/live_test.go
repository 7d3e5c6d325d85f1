package top

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSource gives samples a second apart, by their times, in which
// /starved waits 3 s and runs 0.5 s per second and /busy runs 1.5 s and
// waits 0.25 s per second. Sample number fail (from 1) fails. It is not
// safe for concurrent use, so the race detector sees if it is so used.
type fakeSource struct {
	n      int
	fail   int
	closed bool
	// born is the sample from which /late exists.
	born int
	// From sample number stall on, samples repeat the one before, as a
	// daemon does whose passes are slower than the interval; from
	// sample resume on, they go on again.
	stall, resume int
	// The first notReady samples fail as a daemon before its first pass.
	notReady int
}

func (f *fakeSource) Sample(ctx context.Context) (*Sample, error) {
	if f.closed {
		return nil, errors.New("sample after close")
	}
	f.n++
	if f.n == f.fail {
		return nil, errors.New("daemon gone")
	}
	if f.n <= f.notReady {
		return nil, fmt.Errorf("%w: first pass", ErrNotReady)
	}
	k := f.n - f.notReady
	if f.stall > 0 && k >= f.stall {
		k = f.stall - 1
		if f.resume > 0 && f.n >= f.resume {
			k += f.n - f.resume + 1
		}
	}
	n := float64(k)
	s := sample(time.Duration(k)*time.Second,
		Series{ID: "/", RunSeconds: 2 * n, WaitSeconds: 3.25 * n, Timeslices: 100 * n, Tasks: 20},
		Series{ID: "/starved", RunSeconds: 0.5 * n, WaitSeconds: 3 * n, Timeslices: 10 * n, Tasks: 6},
		Series{ID: "/busy", RunSeconds: 1.5 * n, WaitSeconds: 0.25 * n, Timeslices: 90 * n, Tasks: 1},
		Series{ID: "/docker/" + cidA, RunSeconds: 0.1 * n, Tasks: 1},
	)
	if f.born > 0 && k >= f.born {
		s.Series["/late"] = Series{ID: "/late", RunSeconds: 100, WaitSeconds: 100, Tasks: 2}
	}
	return s, nil
}

func (f *fakeSource) Close() error {
	f.closed = true
	return nil
}

// screenRecorder collects what Live paints, frame by frame.
type screenRecorder struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	frames chan string
}

var escape = regexp.MustCompile(`\x1b\[[0-9;?]*[a-zA-Z]`)

func (s *screenRecorder) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(b)
	for {
		all := s.buf.String()
		// A frame starts at home and ends with erase below.
		end := strings.Index(all, eraseBelow)
		if end < 0 {
			break
		}
		frame := all[:end]
		s.buf.Reset()
		s.buf.WriteString(all[end+len(eraseBelow):])
		select {
		case s.frames <- escape.ReplaceAllString(strings.ReplaceAll(frame, "\r\n", "\n"), ""):
		default:
		}
	}
	return len(b), nil
}

// await returns the first frame for which ok holds, or fails t.
func (s *screenRecorder) await(t *testing.T, what string, ok func(string) bool) string {
	t.Helper()
	deadline := time.After(5 * time.Second)
	var last string
	for {
		select {
		case f := <-s.frames:
			last = f
			if ok(f) {
				return f
			}
		case <-deadline:
			t.Fatalf("no frame %s; the last:\n%s", what, last)
		}
	}
}

// before reports whether a appears in f before b, both at a line start.
func before(f, a, b string) bool {
	i, j := strings.Index(f, "\n"+a+" "), strings.Index(f, "\n"+b+" ")
	return i >= 0 && j >= 0 && i < j
}

func TestLive(t *testing.T) {
	src := &fakeSource{fail: 4}
	inR, inW := io.Pipe()
	rec := &screenRecorder{frames: make(chan string, 1000)}
	done := make(chan error, 1)
	go func() {
		done <- Live(context.Background(), src, State{View: ViewCgroups}, Options{Source: "fake", Interval: 30 * time.Millisecond},
			Terminal{In: inR, Out: rec, Size: func() (int, int) { return 80, 24 }})
	}()
	t.Cleanup(func() { inW.Close() })

	f := rec.await(t, "with rates sorted by wait", func(f string) bool {
		return strings.Contains(f, "WAIT/s*") && strings.Contains(f, "3.000")
	})
	if !before(f, "/starved", "/busy") {
		t.Errorf("by wait, /starved is not above /busy:\n%s", f)
	}
	if !strings.Contains(f, "node  run 2.000/s  wait 3.250/s") {
		t.Errorf("no node totals:\n%s", f)
	}
	lines := strings.Split(f, "\n")
	if len(lines) != 24 || lines[23] != HelpLine {
		t.Errorf("%d lines, the last %q", len(lines), lines[len(lines)-1])
	}
	rec.await(t, "with the failed sample", func(f string) bool { return strings.Contains(f, "error: daemon gone") })
	rec.await(t, "recovered", func(f string) bool { return strings.Contains(f, HelpLine) && strings.Contains(f, "3.000") })

	io.WriteString(inW, "r")
	f = rec.await(t, "sorted by run", func(f string) bool { return strings.Contains(f, "RUN/s*") })
	if !before(f, "/busy", "/starved") || !strings.Contains(f, "sort: run/s") {
		t.Errorf("by run, /busy is not above /starved:\n%s", f)
	}
	io.WriteString(inW, "/sta")
	rec.await(t, "with the filter typed", func(f string) bool { return strings.Contains(f, "filter: sta_") })
	io.WriteString(inW, "\r")
	f = rec.await(t, "filtered", func(f string) bool { return strings.Contains(f, `filter: "sta"`) })
	if strings.Contains(f, "/busy") || !strings.Contains(f, "/starved") {
		t.Errorf("filter sta:\n%s", f)
	}
	io.WriteString(inW, "\x1bp")
	f = rec.await(t, "of containers", func(f string) bool { return strings.Contains(f, "CONTAINER") })
	if !strings.Contains(f, cidA[:13]) || strings.Contains(f, "/starved") {
		t.Errorf("containers view:\n%s", f)
	}
	io.WriteString(inW, "q")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("q did not quit")
	}
	// Live has stopped sampling when it returns, so src is free to close.
	src.Close()
}

func TestLiveFailsOnTheFirstSample(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	err := Live(context.Background(), &fakeSource{fail: 1}, State{}, Options{Interval: time.Hour},
		Terminal{In: inR, Out: io.Discard, Size: func() (int, int) { return 80, 24 }})
	if err == nil || err.Error() != "daemon gone" {
		t.Errorf("Live = %v, want the first sample's error", err)
	}
}

func TestWaitsForTheFirstPass(t *testing.T) {
	src := &fakeSource{notReady: 3}
	var out bytes.Buffer
	if err := Once(context.Background(), src, State{View: ViewCgroups}, Options{Interval: time.Millisecond}, &out, 0, FormatTable); err != nil {
		t.Fatal(err)
	}
	if src.n != 5 || !before(out.String(), "/starved", "/busy") {
		t.Errorf("%d samples:\n%s", src.n, out.String())
	}

	inR, inW := io.Pipe()
	defer inW.Close()
	rec := &screenRecorder{frames: make(chan string, 1000)}
	done := make(chan error, 1)
	go func() {
		done <- Live(context.Background(), &fakeSource{notReady: 2}, State{View: ViewCgroups}, Options{Interval: 20 * time.Millisecond},
			Terminal{In: inR, Out: rec, Size: func() (int, int) { return 80, 24 }})
	}()
	rec.await(t, "saying it waits", func(f string) bool { return strings.Contains(f, "waiting: not ready: first pass") })
	rec.await(t, "with rates", func(f string) bool { return strings.Contains(f, "3.000") && strings.Contains(f, HelpLine) })
	io.WriteString(inW, "q")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestLiveEndsWithInput(t *testing.T) {
	inR, inW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Live(context.Background(), &fakeSource{}, State{}, Options{Interval: time.Hour},
			Terminal{In: inR, Out: io.Discard, Size: func() (int, int) { return 80, 24 }})
	}()
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the end of input did not quit")
	}
}

func TestLiveEndsWithContext(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Live(ctx, &fakeSource{}, State{}, Options{Interval: time.Hour},
			Terminal{In: inR, Out: io.Discard, Size: func() (int, int) { return 80, 24 }})
	}()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancel did not stop Live")
	}
}

func TestOnceTable(t *testing.T) {
	var out bytes.Buffer
	src := &fakeSource{}
	if err := Once(context.Background(), src, State{View: ViewCgroups}, Options{Source: "fake", Interval: time.Millisecond}, &out, 0, FormatTable); err != nil {
		t.Fatal(err)
	}
	if src.n != 2 {
		t.Errorf("%d samples, want 2", src.n)
	}
	got := out.String()
	if !before(got, "/starved", "/busy") {
		t.Errorf("/starved is not above /busy:\n%s", got)
	}
	if !strings.Contains(got, "every 1s") {
		t.Errorf("the interval is not the samples' one second:\n%s", got)
	}
}

func TestOnceJSON(t *testing.T) {
	var out bytes.Buffer
	src := &fakeSource{born: 2}
	st := State{View: ViewCgroups, Sort: ByWait}
	if err := Once(context.Background(), src, st, Options{Source: "fake", Interval: time.Millisecond}, &out, 0, FormatJSON); err != nil {
		t.Fatal(err)
	}
	var got jsonOutput
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if got.View != "cgroups" || got.Sort != "wait" || got.IntervalSeconds != 1 || got.Node == nil {
		t.Errorf("header: %+v", got)
	}
	var names []string
	for _, r := range got.Rows {
		names = append(names, r.Name)
	}
	if strings.Join(names, " ") != "/starved /busy /docker/"+cidA+" /late" {
		t.Fatalf("rows %v", names)
	}
	s := got.Rows[0]
	if *s.RunqueueSecondsPerSecond != 3 || *s.RunSecondsPerSecond != 0.5 || *s.WaitPerRun != 6 || *s.TimeslicesPerSecond != 10 || s.Tasks != 6 {
		t.Errorf("/starved: %+v", s)
	}
	if got.Rows[2].WaitPerRun == nil || *got.Rows[2].WaitPerRun != 0 {
		t.Errorf("a container that ran without waiting has a ratio of 0: %+v", got.Rows[2])
	}
	late := got.Rows[3]
	if late.RunSecondsPerSecond != nil || late.RunqueueSecondsPerSecond != nil || late.WaitPerRun != nil || late.Tasks != 2 {
		t.Errorf("a series new in the second sample has rates: %+v", late)
	}
	if !strings.Contains(out.String(), `"run_seconds_per_second": null`) {
		t.Errorf("unknown rates are not null:\n%s", out.String())
	}
}

func TestOnceWaitsForANewerPass(t *testing.T) {
	var out bytes.Buffer
	src := &fakeSource{stall: 2, resume: 4}
	if err := Once(context.Background(), src, State{View: ViewCgroups}, Options{Interval: time.Millisecond}, &out, 0, FormatTable); err != nil {
		t.Fatal(err)
	}
	if src.n != 4 || !strings.Contains(out.String(), "every 1s") || !before(out.String(), "/starved", "/busy") {
		t.Errorf("%d samples:\n%s", src.n, out.String())
	}
	err := Once(context.Background(), &fakeSource{stall: 2}, State{}, Options{Interval: time.Millisecond}, io.Discard, 0, FormatTable)
	if err == nil || !strings.Contains(err.Error(), "stalled") {
		t.Errorf("a daemon whose passes never move on: %v", err)
	}
}

// A repeated pass leaves the rates as they were rather than starting
// afresh without them.
func TestLiveKeepsRatesOverARepeatedPass(t *testing.T) {
	src := &fakeSource{stall: 3, resume: 5}
	inR, inW := io.Pipe()
	defer inW.Close()
	rec := &screenRecorder{frames: make(chan string, 1000)}
	done := make(chan error, 1)
	go func() {
		done <- Live(context.Background(), src, State{View: ViewCgroups}, Options{Interval: 20 * time.Millisecond},
			Terminal{In: inR, Out: rec, Size: func() (int, int) { return 80, 24 }})
	}()
	rec.await(t, "with rates", func(f string) bool { return strings.Contains(f, "3.000") })
	// Samples 3 and 4 repeat 2; 5 is the pass after it, at 03:04:08.
	f := rec.await(t, "of the pass after the repeats", func(f string) bool {
		if strings.Contains(f, "collecting") {
			t.Errorf("the rates were dropped:\n%s", f)
			return true
		}
		return strings.Contains(f, "03:04:08")
	})
	if !strings.Contains(f, "3.000") {
		t.Errorf("no rates after the repeats:\n%s", f)
	}
	io.WriteString(inW, "q")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestOnceFails(t *testing.T) {
	for _, fail := range []int{1, 2} {
		err := Once(context.Background(), &fakeSource{fail: fail}, State{}, Options{Interval: time.Millisecond}, io.Discard, 80, FormatTable)
		if err == nil || err.Error() != "daemon gone" {
			t.Errorf("sample %d failing: %v", fail, err)
		}
	}
}
