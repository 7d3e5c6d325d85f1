package taskiter

import (
	"log/slog"

	"github.com/schedstatd/schedstatd/internal/loadmode"
)

// Mode says whether to read tasks through the iterator: the values of a
// source flag.
type Mode = loadmode.Mode

// The modes. Auto uses the iterator when the kernel and privileges allow
// and the procfs source otherwise; On requires the iterator; Off never
// loads it.
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
// error. Auto returns nil, after one warning line saying why, when Open
// fails. A nil Source means: use the procfs source.
func Select(mode Mode, opts Options, logger *slog.Logger) (*Source, error) {
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
