package schedlat

import (
	"log/slog"
	"strings"
)

// Select opens a Source for what opts asks (Latency, Preemption). It
// returns nil when neither is asked, and nil after one warning line,
// saying why and what is off, when the kernel or the privileges refuse:
// the daemon goes on without, and unavailable is then true.
func Select(opts Options, logger *slog.Logger) (s *Source, unavailable bool) {
	if !opts.Latency && !opts.Preemption {
		return nil, false
	}
	var what []string
	if opts.Latency {
		what = append(what, "--collect.latency")
	}
	if opts.Preemption {
		what = append(what, "--collect.preemption")
	}
	s, err := Open(opts)
	if err != nil {
		logger.Warn("runqueue latency and preemption tracking unavailable: "+strings.Join(what, " and ")+" off", "err", err)
		return nil, true
	}
	logger.Info("runqueue latency and preemption tracking on: a program on sched_switch counts every wait and preemption", "latency", opts.Latency, "preemption", opts.Preemption)
	if buffered, why := s.Buffered(); !buffered {
		logger.Warn("runqueue latency and preemption counted in each cgroup's map at every switch, about 40 ns more a switch: the kernel refused the per-task buffer (BPF atomics, Linux 5.12, and task storage in a task iterator)", "err", why)
	}
	return s, false
}
