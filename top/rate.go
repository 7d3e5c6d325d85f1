package top

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Row is one line of the table: a cgroup, or a container or pod made of
// one or more cgroups. Rates are per second.
type Row struct {
	// Label is what the first column shows: the cgroup path, or the
	// container or pod name.
	Label string
	// IDs are the cgroups the row sums, shallowest first.
	IDs []string
	// Container, Pod and Namespace are the Kubernetes names, where known.
	Container, Pod, Namespace string
	// Run and Wait are seconds run and waited on a runqueue per second;
	// Timeslices is timeslices per second. They are valid when Known.
	Run, Wait, Timeslices float64
	// Known is false for a row with a series that appeared since the
	// previous sample: it has no rate yet.
	Known bool
	// Tasks is the number of live threads at the later sample.
	Tasks float64
	// Throttled is seconds per second the row's own CPU quota kept its
	// run queues throttled, and Pressure the CPU pressure "some" seconds
	// per second; each is valid when Known and its Has flag is set (the
	// cgroups have a quota, or the kernel reports pressure).
	Throttled, Pressure       float64
	HasThrottled, HasPressure bool
	// WaitHist is the increase per second of each bucket of the runqueue
	// latency histogram (see P99Wait), nil without one; MainPreemptor
	// who preempted the row's tasks most in the daemon's last window.
	WaitHist      []Bucket
	MainPreemptor Preemptor

	// PID and Start (clock ticks since boot) are a process row's identity,
	// or a thread row's process; TID is a thread row's id, with Start its
	// start time. Comm is the process's or thread's name, Cmdline a
	// process's command line; all are zero on cgroup rows.
	PID, TID      int32
	Start         uint64
	Comm, Cmdline string
	// Exited marks a process or thread that was in the previous sample
	// and is not in this one: it is shown once more, marked.
	Exited bool
	// Threads are a process row's thread rows.
	Threads []Row
}

// Key returns what tells the row from the others of its view from one
// sample to the next: the label of a cgroup, container or pod row, and
// the id and start time of a process or thread, so a reused id is never
// taken for the task that had it before.
func (r Row) Key() string {
	switch {
	case r.TID != 0:
		return "t:" + strconv.Itoa(int(r.TID)) + ":" + strconv.FormatUint(r.Start, 10)
	case r.PID != 0:
		return "p:" + strconv.Itoa(int(r.PID)) + ":" + strconv.FormatUint(r.Start, 10)
	}
	return r.Label
}

// LimitExplains reports whether the row's CPU quota can explain at least
// half of its runqueue wait: each throttled run queue holds at least one
// and at most all of its threads, so the quota explains between
// Throttled and Tasks x Throttled seconds of wait per second. Below half,
// contention for the CPUs dominates the wait.
func (r Row) LimitExplains() bool {
	return r.Known && r.HasThrottled && max(r.Tasks, 1)*r.Throttled >= 0.5*r.Wait
}

// Ratio returns seconds waited per second run, the starvation ratio, or
// NaN when the row has no rate or did not run.
func (r Row) Ratio() float64 {
	if !r.Known || r.Run <= 0 {
		return math.NaN()
	}
	return r.Wait / r.Run
}

// Rates returns one row per cgroup of cur, in no particular order, with
// the rates between prev and cur. As Prometheus's rate() does, a counter
// lower than before was reset (the daemon restarted) and its whole new
// value is the increase. A series new in cur has Known false; a series of
// prev missing from cur is gone and has no row.
func Rates(prev, cur *Sample) ([]Row, error) {
	dt := cur.Time.Sub(prev.Time)
	if dt <= 0 {
		return nil, fmt.Errorf("samples out of order: %s then %s", prev.Time.Format(time.RFC3339Nano), cur.Time.Format(time.RFC3339Nano))
	}
	sec := dt.Seconds()
	rows := make([]Row, 0, len(cur.Series))
	for id, c := range cur.Series {
		r := newRow(c)
		if p, ok := prev.Series[id]; ok {
			r.Known = true
			r.Run = increase(p.RunSeconds, c.RunSeconds) / sec
			r.Wait = increase(p.WaitSeconds, c.WaitSeconds) / sec
			r.Timeslices = increase(p.Timeslices, c.Timeslices) / sec
			if r.HasThrottled = p.HasThrottled && c.HasThrottled; r.HasThrottled {
				r.Throttled = increase(p.ThrottledSeconds, c.ThrottledSeconds) / sec
			}
			if r.HasPressure = p.HasPressure && c.HasPressure; r.HasPressure {
				r.Pressure = increase(p.PressureSeconds, c.PressureSeconds) / sec
			}
			r.WaitHist = histIncrease(p.WaitBuckets, c.WaitBuckets, sec)
		}
		r.MainPreemptor = cur.Preemptors[id]
		rows = append(rows, r)
	}
	return rows, nil
}

// Unrated returns one row per cgroup of s, none with a rate: what there is
// to show before a second sample.
func Unrated(s *Sample) []Row {
	rows := make([]Row, 0, len(s.Series))
	for _, c := range s.Series {
		rows = append(rows, newRow(c))
	}
	return rows
}

// newRow returns the row of one cgroup, without rates.
func newRow(c Series) Row {
	return Row{
		Label:     c.ID,
		IDs:       []string{c.ID},
		Container: c.Container,
		Pod:       c.Pod,
		Namespace: c.Namespace,
		Tasks:     c.Tasks,
	}
}

// increase is how much a counter grew from prev to cur; a counter that
// went down was reset, so all of cur is new.
func increase(prev, cur float64) float64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}
