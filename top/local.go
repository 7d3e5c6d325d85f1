package top

import (
	"context"
	"fmt"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
)

// nsPerSecond converts the table's nanoseconds.
const nsPerSecond = 1e9

// LocalSource runs accounting passes of a task table in this process, for
// a node without a daemon. The first pass reads every thread's lifetime
// totals; rates come from the passes after it.
type LocalSource struct {
	// Table is owned by the goroutine that calls Sample.
	Table *container.Table
	// Dir is the walked hierarchy's directory, for messages.
	Dir string
	// Proc is the procfs mount tasks' names are read from; empty is
	// /proc.
	Proc string
}

// Sample implements Source: it runs one pass.
func (l *LocalSource) Sample(ctx context.Context) (*Sample, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := l.Table.Pass(); err != nil {
		return nil, fmt.Errorf("reading the cgroups under %s: %w", l.Dir, err)
	}
	return fromSnapshot(l.Dir, l.Table.Snapshot())
}

// Close implements Source: it closes the table and every fd it keeps.
func (l *LocalSource) Close() error { return l.Table.Close() }

// fromSnapshot makes a Sample of a table's snapshot. A snapshot without a
// cgroup, or without any thread listed, means nothing here is readable.
func fromSnapshot(dir string, snap *container.Snapshot) (*Sample, error) {
	s := &Sample{Time: snap.Time, Series: make(map[string]Series, len(snap.Cgroups))}
	tasks := 0
	for _, c := range snap.Cgroups {
		// The same values as the daemon's id and name labels.
		id := cgroupfs.LabelValue(c.Path)
		s.Series[id] = Series{
			ID:               id,
			Name:             cgroupfs.LabelValue(cgroupfs.ParseIdentity(c.Path).Name),
			RunSeconds:       float64(c.Stat.RunNanoseconds) / nsPerSecond,
			WaitSeconds:      float64(c.Stat.WaitNanoseconds) / nsPerSecond,
			Timeslices:       float64(c.Stat.Timeslices),
			Tasks:            float64(c.Tasks),
			ThrottledSeconds: float64(c.Bandwidth.ThrottledNanoseconds) / nsPerSecond,
			HasThrottled:     c.Bandwidth.HasThrottling,
			PressureSeconds:  float64(c.Pressure.SomeNanoseconds) / nsPerSecond,
			HasPressure:      c.Pressure.HasSome,
		}
		if c.Path == "/" {
			tasks = c.Tasks
		}
	}
	if len(s.Series) == 0 || tasks == 0 {
		return nil, fmt.Errorf("%w: no cgroup under %s lists a thread this process can see; run as root in the host's PID namespace, with --path.cgroupfs and --path.procfs at the host's mounts", ErrNoCgroups, dir)
	}
	return s, nil
}
