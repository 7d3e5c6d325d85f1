package taskiter

import (
	"log/slog"

	"github.com/schedstatd/schedstatd/internal/loadmode"
)

// Select opens a Source as mode (auto, on or off) says. Off returns nil. On returns Open's
// error. Auto returns nil, after one warning line saying why, when Open
// fails. A nil Source means: use the procfs source.
func Select(mode loadmode.Mode, opts Options, logger *slog.Logger) (*Source, error) {
	var dir string
	if opts.Hierarchy != nil {
		dir = opts.Hierarchy.Dir()
	}
	return loadmode.Select(mode, func() (*Source, error) { return Open(opts) }, logger, loadmode.Messages{
		Name:       "task iterator",
		Off:        "task iterator off: tasks are listed and read through cgroupfs and procfs",
		Loaded:     "task iterator on: one read per pass lists and reads every task",
		LoadedArgs: []any{"hierarchy", dir},
		Fallback:   "task iterator unavailable, falling back to the procfs source",
	})
}
