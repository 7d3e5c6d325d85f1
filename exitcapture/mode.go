package exitcapture

import (
	"log/slog"

	"github.com/schedstatd/schedstatd/internal/loadmode"
)

// Select opens a Source as mode (the value of --exit-capture) says. Off
// returns nil. On returns Open's
// error. Auto returns nil, after one warning line saying why and what is
// lost, when Open fails; a Source that loaded without its move records
// is said in one warning line too. A nil Source is valid: Feed, Drain, Stats and
// Close do nothing, and NewCollector reports capture disabled.
func Select(mode loadmode.Mode, opts Options, logger *slog.Logger) (*Source, error) {
	var hierarchy string
	if opts.Hierarchy != nil {
		hierarchy = opts.Hierarchy.Name()
	}
	s, err := loadmode.Select(mode, func() (*Source, error) { return Open(opts) }, logger, loadmode.Messages{
		Name:       "--exit-capture=on",
		Off:        "exit capture off: an exited task's time counts up to the last pass that saw it",
		Loaded:     "exit capture on: exited tasks count up to their exit",
		LoadedArgs: []any{"hierarchy", hierarchy},
		Fallback:   "exit capture unavailable, polling only: an exited task's time counts up to the last pass that saw it, and tasks that live less than a pass are missed",
	})
	if err := s.MigrationsErr(); err != nil {
		logger.Warn("move records unavailable: a task that moves between cgroups has its increase since the last pass, or its whole life if no pass saw it, credited to its new cgroup", "err", err)
	}
	return s, err
}
