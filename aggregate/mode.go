package aggregate

import (
	"log/slog"

	"github.com/schedstatd/schedstatd/internal/loadmode"
)

// Select opens a Source as mode (auto, on or off) says. Off returns nil.
// On returns Open's error. Auto returns nil, after one line saying why,
// when Open fails. A nil Source means: use another task source.
func Select(mode loadmode.Mode, opts Options, logger *slog.Logger) (*Source, error) {
	if opts.Logger == nil {
		opts.Logger = logger
	}
	var dir string
	if opts.Hierarchy != nil {
		dir = opts.Hierarchy.Dir()
	}
	return loadmode.Select(mode, func() (*Source, error) { return Open(opts) }, logger, loadmode.Messages{
		Name:       "aggregating source",
		Off:        "kernel totals off",
		Loaded:     "kernel totals on: a task iterator keeps per-cgroup totals in the kernel, and a pass reads one entry per cgroup",
		LoadedArgs: []any{"hierarchy", dir, "exits_at", exitsAt(opts.Exits), "pin_path", opts.PinPath},
		Fallback:   "kernel totals unavailable (they need Linux 5.11 or later, kernel BTF, the host PID namespace and CAP_BPF with CAP_PERFMON), falling back to another task source",
	})
}

// exitsAt names the hook that takes a task's last stretch.
func exitsAt(exits bool) string {
	if exits {
		return "sched_process_free"
	}
	return "none"
}
