package taskiter

import (
	"fmt"
	"log/slog"
)

// Mode says whether to read tasks through the iterator: the values of a
// source flag.
type Mode string

// The modes. Auto uses the iterator when the kernel and privileges allow
// and the procfs source otherwise; On requires the iterator; Off never
// loads it.
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
	return "", fmt.Errorf("taskiter: mode %q is none of auto, on, off", s)
}

// Select opens a Source as mode says. Off returns nil. On returns Open's
// error. Auto returns nil, after one warning line saying why, when Open
// fails. A nil Source means: use the procfs source.
func Select(mode Mode, opts Options, logger *slog.Logger) (*Source, error) {
	switch mode {
	case Off:
		logger.Info("task iterator off: tasks are listed and read through cgroupfs and procfs")
		return nil, nil
	case On, Auto:
	default:
		return nil, fmt.Errorf("taskiter: mode %q is none of auto, on, off", mode)
	}
	s, err := Open(opts)
	if err == nil {
		logger.Info("task iterator on: one read per pass lists and reads every task", "hierarchy", opts.Hierarchy.Dir())
		return s, nil
	}
	if mode == On {
		return nil, fmt.Errorf("task iterator: %w", err)
	}
	logger.Warn("task iterator unavailable, falling back to the procfs source", "err", err)
	return nil, nil
}
