package top

import (
	"context"
	"errors"
	"time"
)

// Errors a Source wraps, so callers can tell what went wrong with
// errors.Is and say what to do about it.
var (
	// ErrUnreachable means the daemon could not be reached: no connection,
	// a TLS failure, a timeout.
	ErrUnreachable = errors.New("cannot reach the daemon")
	// ErrNotMetrics means the URL answered, but not with schedstatd's
	// metrics: a wrong path, a web page, another exporter.
	ErrNotMetrics = errors.New("not schedstatd metrics")
	// ErrUnauthorized means the daemon asked for credentials or refused
	// the ones given.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrNoCgroups means there is no cgroup with readable counters.
	ErrNoCgroups = errors.New("no cgroups to read")
	// ErrNotReady means the daemon has not finished its first pass: a
	// wait, not a failure.
	ErrNotReady = errors.New("not ready")
)

// Series is one cgroup's counters at one moment. Times are in seconds.
type Series struct {
	// ID is the cgroup path relative to the hierarchy root, "/" for the
	// root: the id label.
	ID string
	// Name, Container, Pod and Namespace are the labels of the same
	// names; empty when unknown.
	Name, Container, Pod, Namespace string
	// RunSeconds, WaitSeconds and Timeslices are counters.
	RunSeconds, WaitSeconds, Timeslices float64
	// Tasks is the number of live threads, a gauge.
	Tasks float64
	// ThrottledSeconds is the time the cgroup's own CPU quota kept its run
	// queues throttled, and PressureSeconds the CPU pressure "some" total,
	// both counters, valid when HasThrottled and HasPressure are set.
	ThrottledSeconds, PressureSeconds float64
	HasThrottled, HasPressure         bool
	// WaitBuckets is the runqueue latency histogram's classic buckets,
	// +Inf last, nil unless the daemon serves it (--collect.latency).
	WaitBuckets []Bucket
}

// Sample is every cgroup's counters at one moment.
type Sample struct {
	// Time is when the counters were taken.
	Time time.Time
	// Series is keyed by Series.ID.
	Series map[string]Series
	// Preemptors are the main preemptors of the daemon's last window by
	// victim cgroup path, nil unless it serves them
	// (--collect.preemption).
	Preemptors map[string]Preemptor
}

// Source gives Samples. Sample and Close are called from one goroutine.
type Source interface {
	// Sample returns the counters now.
	Sample(ctx context.Context) (*Sample, error)
	// Close releases what the source holds.
	Close() error
}
