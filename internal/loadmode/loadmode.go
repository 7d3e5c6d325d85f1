// Package loadmode chooses, from an auto|on|off flag, whether to load an
// optional kernel-side source (an eBPF program) and says in the log what
// the choice means.
package loadmode

import (
	"fmt"
	"log/slog"
)

// Mode is auto, on or off.
type Mode string

// The modes. Auto loads the source when the kernel and privileges allow and
// goes on without it otherwise; On requires it; Off never loads it.
const (
	Auto Mode = "auto"
	On   Mode = "on"
	Off  Mode = "off"
)

// Modes lists the valid modes, for a flag's enum.
func Modes() []string { return []string{string(Auto), string(On), string(Off)} }

// Parse returns the mode named s.
func Parse(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Auto, On, Off:
		return m, nil
	}
	return "", fmt.Errorf("mode %q is none of auto, on, off", s)
}

// Messages are the log lines of each outcome.
type Messages struct {
	// Name names the source in errors.
	Name string
	// Off is logged when the mode is off, Loaded (with LoadedArgs) when
	// the source loaded, and Fallback, with the reason, when auto goes on
	// without it.
	Off, Loaded, Fallback string
	LoadedArgs            []any
}

// Select opens the source as mode says. Off returns nil. On returns open's
// error. Auto returns nil, after one warning line saying why, when open
// fails.
func Select[T any](mode Mode, open func() (*T, error), logger *slog.Logger, msg Messages) (*T, error) {
	switch mode {
	case Off:
		logger.Info(msg.Off)
		return nil, nil
	case On, Auto:
	default:
		return nil, fmt.Errorf("%s: mode %q is none of auto, on, off", msg.Name, mode)
	}
	s, err := open()
	if err == nil {
		logger.Info(msg.Loaded, msg.LoadedArgs...)
		return s, nil
	}
	if mode == On {
		return nil, fmt.Errorf("%s: %w", msg.Name, err)
	}
	logger.Warn(msg.Fallback, "err", err)
	return nil, nil
}
