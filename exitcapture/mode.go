package exitcapture

import (
	"log/slog"

	"github.com/schedstatd/schedstatd/internal/loadmode"
)

// Mode says whether to capture exits: the values of --exit-capture.
type Mode = loadmode.Mode

// The modes. Auto captures exits when the kernel and privileges allow and
// otherwise polls only; On requires exit capture; Off never loads it.
const (
	Auto = loadmode.Auto
	On   = loadmode.On
	Off  = loadmode.Off
)

// Modes lists the valid modes, for a flag's enum.
func Modes() []string { return loadmode.Modes() }

// ParseMode returns the mode named s.
func ParseMode(s string) (Mode, error) { return loadmode.Parse(s) }

// Select opens a Source as mode says. Off returns nil. On returns Open's
// error. Auto returns nil, after one warning line saying why and what is
// lost, when Open fails. A nil Source is valid: Feed, Drain, Stats and
// Close do nothing, and NewCollector reports capture disabled.
func Select(mode Mode, opts Options, logger *slog.Logger) (*Source, error) {
	return loadmode.Select(mode, func() (*Source, error) { return Open(opts) }, logger, loadmode.Messages{
		Name:       "--exit-capture=on",
		Off:        "exit capture off: an exited task's time counts up to the last pass that saw it",
		Loaded:     "exit capture on: exited tasks count up to their exit",
		LoadedArgs: []any{"unified_dir", opts.UnifiedDir},
		Fallback:   "exit capture unavailable, polling only: an exited task's time counts up to the last pass that saw it, and tasks that live less than a pass are missed",
	})
}
