package top

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Options are what Once and Live need besides the State.
type Options struct {
	// Source names where samples come from, for the title line.
	Source string
	// Interval is the time between samples.
	Interval time.Duration
}

// stalledTries is how many more samples Once takes when the second shows
// the same pass as the first.
const stalledTries = 3

// Formats Once writes.
const (
	FormatTable = "table"
	FormatJSON  = "json"
)

// Once takes two samples of src one interval apart and writes one table
// of st's view to w: as text fitted to width columns (0: no limit), or as
// JSON. When st is drilled down (st.Target), the table is of the
// target's processes or threads, src must be a TaskSource, and in JSON
// each process carries its threads.
func Once(ctx context.Context, src Source, st State, opt Options, w io.Writer, width int, format string) error {
	if t := st.Target(); t != nil {
		return onceTasks(ctx, src, st, t, opt, w, width, format)
	}
	prev, err := firstSample(ctx, src, opt.Interval)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(opt.Interval):
	}
	cur, err := src.Sample(ctx)
	if err != nil {
		return err
	}
	// A daemon whose passes are slower than the interval answers with the
	// same pass again; wait for a newer one.
	for range stalledTries {
		if cur.Time.After(prev.Time) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(opt.Interval):
		}
		if cur, err = src.Sample(ctx); err != nil {
			return err
		}
	}
	if cur.Time.Equal(prev.Time) {
		return fmt.Errorf("no newer pass than the one of %s in %d samples %s apart: the daemon's passes are stalled or slower than --interval", prev.Time.Format(time.TimeOnly), stalledTries+1, opt.Interval)
	}
	rows, err := Rates(prev, cur)
	if err != nil {
		return err
	}
	return write(st.Screen(rows, opt.Source, cur.Time.Sub(prev.Time), cur.Time), w, width, format)
}

// write writes s as Once does.
func write(s *Screen, w io.Writer, width int, format string) error {
	if format == FormatJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(jsonScreen(s))
	}
	lines := append(s.Header(width), s.Table(width)...)
	_, err := io.WriteString(w, strings.Join(lines, "\n")+"\n")
	return err
}

// onceTasks is Once for a drilled-down target: two answers of its cgroups
// one interval apart (more when the daemon's passes are slower).
func onceTasks(ctx context.Context, src Source, st State, t *Target, opt Options, w io.Writer, width int, format string) error {
	deadline := time.Now().Add(maxReadyWait)
	prev, err := sampleTasks(ctx, src, t.IDs)
	for errors.Is(err, ErrNotReady) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(opt.Interval):
		}
		prev, err = sampleTasks(ctx, src, t.IDs)
	}
	if err != nil {
		return err
	}
	named(t, prev)
	var cur TaskSample
	for range stalledTries + 1 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(opt.Interval):
		}
		if cur, err = sampleTasks(ctx, src, t.IDs); err != nil {
			return err
		}
		if newer(prev, cur) {
			break
		}
	}
	if !newer(prev, cur) {
		return fmt.Errorf("no newer pass than the one of %s in %d samples %s apart: the daemon's passes are stalled or slower than --interval", prev[0].Time.Format(time.TimeOnly), stalledTries+1, opt.Interval)
	}
	rows := TaskRows(prev, cur)
	if t.Threads {
		var ok bool
		if rows, ok = ThreadsOf(rows, t.PID, t.Start); !ok {
			return fmt.Errorf("no process %d in %s", t.PID, strings.Join(t.IDs, ", "))
		}
	}
	var dt time.Duration
	if len(cur) > 0 {
		dt = cur[0].Time.Sub(prev[0].Time)
	}
	return write(st.Screen(rows, opt.Source, dt, cur[0].Time), w, width, format)
}

// OpenProcess returns st drilled down into the threads of process pid of
// the cgroups of its target, as found by one answer of src: pid names
// the process that has it now.
func OpenProcess(ctx context.Context, src Source, st State, pid int32) (State, error) {
	t := st.Target()
	if t == nil {
		return st, errors.New("a process is chosen within a cgroup: give --cgroup with --pid")
	}
	ts, err := sampleTasks(ctx, src, t.IDs)
	if err != nil {
		return st, err
	}
	for _, part := range ts {
		for _, p := range part.Processes {
			if p.PID == pid {
				st.Drill = append(st.Drill, Step{Target: Target{IDs: t.IDs, Label: processLabel(p.PID, p.Comm, p.Cmdline), Threads: true, PID: p.PID, Start: p.StartTicks}})
				return st, nil
			}
		}
	}
	return st, fmt.Errorf("no process %d in %s", pid, strings.Join(t.IDs, ", "))
}

// maxReadyWait bounds how long Once waits for a daemon's first pass.
const maxReadyWait = time.Minute

// firstSample returns src's first sample, waiting every interval, for up
// to maxReadyWait, while the daemon has not finished its first pass.
func firstSample(ctx context.Context, src Source, interval time.Duration) (*Sample, error) {
	deadline := time.Now().Add(maxReadyWait)
	for {
		s, err := src.Sample(ctx)
		if !errors.Is(err, ErrNotReady) || time.Now().After(deadline) {
			return s, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// jsonOutput is the JSON form of a Screen.
type jsonOutput struct {
	Time            time.Time `json:"time"`
	IntervalSeconds float64   `json:"interval_seconds"`
	Source          string    `json:"source"`
	View            string    `json:"view"`
	Sort            string    `json:"sort"`
	Reverse         bool      `json:"reverse,omitempty"`
	Filter          string    `json:"filter,omitempty"`
	// Scope names the row drilled down into; Node is then its total.
	Scope string    `json:"scope,omitempty"`
	Node  *jsonRow  `json:"node,omitempty"`
	Rows  []jsonRow `json:"rows"`
}

// jsonRow is the JSON form of a Row. Rates are null while unknown.
type jsonRow struct {
	Name                     string   `json:"name"`
	IDs                      []string `json:"ids"`
	Container                string   `json:"container,omitempty"`
	Pod                      string   `json:"pod,omitempty"`
	Namespace                string   `json:"namespace,omitempty"`
	RunSecondsPerSecond      *float64 `json:"run_seconds_per_second"`
	RunqueueSecondsPerSecond *float64 `json:"runqueue_seconds_per_second"`
	WaitPerRun               *float64 `json:"wait_per_run"`
	TimeslicesPerSecond      *float64 `json:"timeslices_per_second"`
	Tasks                    float64  `json:"tasks"`
	// Throttled and pressure are null where the cgroups have no quota or
	// the kernel no pressure; LimitExplains is Row.LimitExplains.
	ThrottledSecondsPerSecond *float64 `json:"throttled_seconds_per_second"`
	PressureSecondsPerSecond  *float64 `json:"pressure_seconds_per_second"`
	LimitExplains             bool     `json:"limit_explains_wait"`
	// P99WaitSeconds is Row.P99Wait, null without a latency histogram;
	// MainPreemptor names who preempted the row's tasks most.
	P99WaitSeconds *float64 `json:"p99_wait_seconds,omitempty"`
	MainPreemptor  string   `json:"main_preemptor,omitempty"`
	// A process or thread row (drilled down) carries its identity, its
	// names, whether it exited since the sample before, and a process
	// its threads.
	PID        int32     `json:"pid,omitempty"`
	TID        int32     `json:"tid,omitempty"`
	StartTicks uint64    `json:"start_ticks,omitempty"`
	Comm       string    `json:"comm,omitempty"`
	Cmdline    string    `json:"cmdline,omitempty"`
	Exited     bool      `json:"exited,omitempty"`
	Threads    []jsonRow `json:"threads,omitempty"`
}

func jsonScreen(s *Screen) jsonOutput {
	out := jsonOutput{
		Time:            s.Time,
		IntervalSeconds: s.Interval.Seconds(),
		Source:          s.Source,
		View:            s.View.String(),
		Sort:            s.Sort.String(),
		Reverse:         s.Reverse,
		Filter:          s.Filter,
		Scope:           s.Scope,
		Rows:            make([]jsonRow, 0, len(s.Rows)),
	}
	if s.Node != nil {
		n := toJSON(*s.Node)
		out.Node = &n
	}
	for _, r := range s.Rows {
		out.Rows = append(out.Rows, toJSON(r))
	}
	return out
}

func toJSON(r Row) jsonRow {
	j := jsonRow{
		Name:      r.Label,
		IDs:       r.IDs,
		Container: r.Container,
		Pod:       r.Pod,
		Namespace: r.Namespace,
		Tasks:     r.Tasks,
		PID:       r.PID, TID: r.TID, StartTicks: r.Start,
		Comm: r.Comm, Cmdline: r.Cmdline, Exited: r.Exited,
	}
	for _, th := range r.Threads {
		j.Threads = append(j.Threads, toJSON(th))
	}
	if r.Known {
		j.RunSecondsPerSecond = ptr(r.Run)
		j.RunqueueSecondsPerSecond = ptr(r.Wait)
		j.TimeslicesPerSecond = ptr(r.Timeslices)
		if v := r.Ratio(); !math.IsNaN(v) {
			j.WaitPerRun = ptr(v)
		}
		if r.HasThrottled {
			j.ThrottledSecondsPerSecond = ptr(r.Throttled)
		}
		if r.HasPressure {
			j.PressureSecondsPerSecond = ptr(r.Pressure)
		}
		j.LimitExplains = r.LimitExplains()
		if v, ok := r.P99Wait(); ok {
			j.P99WaitSeconds = ptr(v)
		}
	}
	j.MainPreemptor = r.MainPreemptor.Label
	return j
}

func ptr(v float64) *float64 { return &v }
