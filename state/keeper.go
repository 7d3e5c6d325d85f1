package state

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedlat"
)

// Config says where and how often a Keeper writes.
type Config struct {
	// Path is the state file; empty turns keeping state off.
	Path string
	// Interval is the time between writes; a pass that answers a scrape
	// writes too, before the answer goes out.
	Interval time.Duration
	// Origin is this daemon's boot and hierarchy.
	Origin Origin
	// Latency, if set, is the rollup of the runqueue latency histograms
	// and preemption counts, kept beside the table.
	Latency *schedlat.Rollup
	Logger  *slog.Logger
}

// Results are the outcomes of a Keeper's Restore, as the values of the
// result label of schedstatd_state_restore: restored, or why not.
var Results = []string{"restored", "disabled", "missing", "truncated", "corrupt", "not_state", "newer", "foreign", "unreadable", "rejected", "locked", "unwritable"}

// Keeper restores a table from its state file at start and writes the
// table's state from the poller's goroutine: every Interval, after every
// pass that answers a scrape (so no value ever served is above what the
// file holds), and when the daemon stops. A file that cannot be written is
// said once in the log and counted; the daemon runs on. Restore,
// AfterPass and Stop must be called from the goroutine that owns the
// table; the metrics may be collected from any goroutine.
type Keeper struct {
	cfg   Config
	lock  *os.File
	off   bool // no writes: disabled, locked or unwritable
	st    container.State
	buf   []byte
	last  time.Time // last write attempt
	fails bool      // the last write failed
	told  bool      // the restore's outcome was logged after the first pass

	mu       sync.Mutex
	result   string
	writes   uint64
	failures uint64
	bytes    int
	lastGood time.Time
	duration time.Duration
	stats    container.RestoreStats
}

// NewKeeper returns a keeper for cfg. Nothing is read or written before
// Restore.
func NewKeeper(cfg Config) *Keeper {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Keeper{cfg: cfg}
}

// Restore takes the lock on the state file, reads it and, if it is whole,
// of this format, boot and hierarchy, restores t from it; otherwise t
// starts fresh and one log line says why. Call it before the first pass.
func (k *Keeper) Restore(t *container.Table) {
	log := k.cfg.Logger.With("path", k.cfg.Path)
	if k.cfg.Path == "" {
		k.off = true
		k.setResult("disabled")
		log.Info("no --state.path: counters start from zero at every restart")
		return
	}
	if err := os.MkdirAll(filepath.Dir(k.cfg.Path), 0o700); err != nil {
		k.refuse(log, "unwritable", err, "state directory cannot be made: counters will start from zero at the next restart")
		return
	}
	lock, err := Lock(k.cfg.Path)
	if err != nil {
		result := "unwritable"
		if errors.Is(err, ErrLocked) {
			result = "locked"
		}
		k.refuse(log, result, err, "state file cannot be kept: counters will start from zero at the next restart")
		return
	}
	k.lock = lock
	b, err := ReadFile(k.cfg.Path)
	if errors.Is(err, fs.ErrNotExist) {
		k.setResult("missing")
		log.Info("no state file: starting from zero")
		return
	}
	var f *File
	if err == nil {
		f, err = Decode(b)
	}
	if err == nil {
		err = k.cfg.Origin.Check(f.Origin)
	}
	if err != nil {
		k.setResult(Reason(err))
		log.Warn("state file not loaded: starting from zero", "reason", Reason(err), "err", err)
		return
	}
	if err := t.Restore(f.Table); err != nil {
		k.setResult("rejected")
		log.Warn("state file not loaded: starting from zero", "reason", "rejected", "err", err)
		return
	}
	if len(f.Latency.Totals) > 0 {
		k.cfg.Latency.Restore(f.Latency)
	}
	k.setResult("restored")
	log.Info("state restored", "written", f.Written.UTC().Format(time.RFC3339Nano), "age", time.Since(f.Written).Round(time.Millisecond),
		"cgroups", len(f.Table.Cgroups), "tasks", len(f.Table.Tasks), "tombstones", len(f.Table.Tombstones),
		"latency_cgroups", len(f.Latency.Totals))
}

func (k *Keeper) refuse(log *slog.Logger, result string, err error, msg string) {
	k.off = true
	k.setResult(result)
	log.Error(msg, "reason", result, "err", err)
}

func (k *Keeper) setResult(r string) {
	k.mu.Lock()
	k.result = r
	k.mu.Unlock()
}

// AfterPass writes t's state if a request waits for this pass or Interval
// has passed since the last write. It reports whether the pass's totals
// may be served: false only when it did not write them and could have.
func (k *Keeper) AfterPass(t *container.Table, requested bool) (kept bool) {
	if rs := t.Restored(); rs.Done && k.told && rs.LateExits != k.stats.LateExits {
		k.mu.Lock()
		k.stats.LateExits = rs.LateExits
		k.mu.Unlock()
	} else if rs.Done && !k.told {
		k.told = true
		k.mu.Lock()
		k.stats = rs
		k.mu.Unlock()
		k.cfg.Logger.Info("restored state resumed", "tasks_resumed", rs.TasksResumed, "tasks_saved", rs.Tasks,
			"tasks_exit_records", rs.TasksExited, "cgroups_removed_meanwhile", rs.CgroupsGone,
			"filled_run_seconds", float64(rs.FilledRunNanoseconds)/1e9, "totals_continued", rs.TotalsContinued)
	}
	if k.off {
		return true
	}
	if !requested && time.Since(k.last) < k.cfg.Interval {
		return false
	}
	k.write(t)
	return true
}

// Stop writes t's state one last time, when the daemon stops.
func (k *Keeper) Stop(t *container.Table) {
	if !k.off {
		k.write(t)
	}
}

// Writing reports whether the keeper writes the state file: after Restore,
// false when it is off, locked by another process or cannot be written.
func (k *Keeper) Writing() bool { return !k.off }

// Close releases the lock on the state file.
func (k *Keeper) Close() error {
	if k.lock == nil {
		return nil
	}
	err := k.lock.Close()
	k.lock = nil
	return err
}

func (k *Keeper) write(t *container.Table) {
	start := time.Now()
	k.last = start
	t.StateInto(&k.st)
	if len(k.st.Cgroups) == 0 {
		return // no pass yet, nothing restored: nothing to keep
	}
	f := File{Origin: k.cfg.Origin, Written: start, Table: k.st}
	if k.cfg.Latency.Counter() != nil {
		// What the latency series serve of this pass is what they read
		// now: the rollup serves it again to the pass's scrapes.
		f.Latency, _ = k.cfg.Latency.Keep(t.Snapshot())
	}
	k.buf = Append(k.buf[:0], &f)
	err := WriteFile(k.cfg.Path, k.buf)
	took, size := time.Since(start), len(k.buf)
	if cap(k.buf) > 4*len(k.buf)+64<<10 {
		k.buf = nil // a burst of tasks is over: give its buffer back
	}
	k.mu.Lock()
	if err != nil {
		k.failures++
	} else {
		k.writes++
		k.bytes = size
		k.lastGood = time.Now()
		k.duration = took
	}
	k.mu.Unlock()
	switch {
	case err != nil && !k.fails:
		k.cfg.Logger.Error("state file cannot be written; running on, counters would start from zero at a restart", "path", k.cfg.Path, "err", err)
	case err == nil && k.fails:
		k.cfg.Logger.Info("state file written again", "path", k.cfg.Path)
	}
	k.fails = err != nil
}
