package exitcapture

import (
	"log/slog"

	"github.com/schedstatd/schedstatd/internal/loadmode"
)

// Select opens a Source as mode (the value of --exit-capture) says. Off
// returns nil. On returns Open's
// error. Auto returns nil, after one warning line saying why and what is
// lost, when Open fails. A nil Source is valid: Feed, Drain, Stats and
// Close do nothing, and NewCollector reports capture disabled.
func Select(mode loadmode.Mode, opts Options, logger *slog.Logger) (*Source, error) {
	var hierarchy string
	if opts.Hierarchy != nil {
		hierarchy = opts.Hierarchy.Name()
	}
	return loadmode.Select(mode, func() (*Source, error) { return Open(opts) }, logger, loadmode.Messages{
		Name:       "--exit-capture=on",
		Off:        "exit capture off: an exited task's time counts up to the last pass that saw it",
		Loaded:     "exit capture on: exited tasks count up to their exit",
		LoadedArgs: []any{"hierarchy", hierarchy},
		Fallback:   "exit capture unavailable, polling only: an exited task's time counts up to the last pass that saw it, and tasks that live less than a pass are missed",
	})
}
