package exitcapture

import (
	"fmt"
	"log/slog"
)

// Mode says whether to capture exits: the values of --exit-capture.
type Mode string

// The modes. Auto captures exits when the kernel and privileges allow and
// otherwise polls only; On requires exit capture; Off never loads it.
const (
	Auto Mode = "auto"
	On   Mode = "on"
	Off  Mode = "off"
)

// Modes lists the valid modes, for a flag's enum.
func Modes() []string { return []string{string(Auto), string(On), string(Off)} }

// ParseMode returns the mode named s.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Auto, On, Off:
		return m, nil
	}
	return "", fmt.Errorf("exitcapture: mode %q is none of auto, on, off", s)
}

// Select opens a Source as mode says. Off returns nil. On returns Open's
// error. Auto returns nil, after one warning line saying why and what is
// lost, when Open fails. A nil Source is valid: Feed, Drain, Stats and
// Close do nothing, and NewCollector reports capture disabled.
func Select(mode Mode, opts Options, logger *slog.Logger) (*Source, error) {
	switch mode {
	case Off:
		logger.Info("exit capture off: an exited task's time counts up to the last pass that saw it")
		return nil, nil
	case On, Auto:
	default:
		return nil, fmt.Errorf("exitcapture: mode %q is none of auto, on, off", mode)
	}
	s, err := Open(opts)
	if err == nil {
		logger.Info("exit capture on: exited tasks count up to their exit", "unified_dir", opts.UnifiedDir)
		return s, nil
	}
	if mode == On {
		return nil, fmt.Errorf("--exit-capture=on: %w", err)
	}
	logger.Warn("exit capture unavailable, polling only: an exited task's time counts up to the last pass that saw it, and tasks that live less than a pass are missed", "err", err)
	return nil, nil
}
