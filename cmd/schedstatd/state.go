package main

import (
	"log/slog"
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/collector"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedlat"
	"github.com/schedstatd/schedstatd/state"
)

// defaultStatePath is under /run, a tmpfs on every node: the state
// survives a restart of the daemon and is gone after a reboot, as the
// kernel counters it continues are.
const defaultStatePath = "/run/schedstatd/state"

// stateConfig is what the --state.* flags say.
type stateConfig struct {
	path     string
	interval time.Duration
}

// addStateFlags adds the flags of the state file.
func addStateFlags(c flagger, sc *stateConfig) {
	c.Flag("state.path", "File that keeps the counters across restarts of the daemon (the host's /run survives a pod restart, not a reboot); empty turns it off.").Default(defaultStatePath).StringVar(&sc.path)
	durationFlag(c, "state.interval", "Time between writes of the state file; it is also written after every pass that answers a scrape and on SIGTERM or SIGINT.", "10s", &sc.interval, time.Second, time.Hour)
}

// openState restores table, and the latency rollup if it counts, from the
// state file the flags name and returns the keeper that goes on writing
// them. Only a bad flag is an error: whatever
// else fails, the daemon runs on from zero and the log says why, once.
func openState(cfg *config, table *container.Table, latency *schedlat.Rollup, logger *slog.Logger) (*state.Keeper, error) {
	sc := state.Config{Path: cfg.state.path, Interval: cfg.state.interval, Latency: latency, Logger: logger}
	if sc.Path != "" {
		origin, err := stateOrigin(cfg)
		if err != nil {
			logger.Error("cannot tell this boot and hierarchy apart from others: the state file is not kept", "err", err)
			sc.Path = ""
		}
		sc.Origin = origin
	}
	k := state.NewKeeper(sc)
	k.Restore(table)
	return k, nil
}

// stateOrigin returns the boot and hierarchy a state file must match.
func stateOrigin(cfg *config) (state.Origin, error) {
	boot, err := state.BootID(cfg.procfs)
	if err != nil {
		return state.Origin{}, err
	}
	h, err := cgroupfs.Open(cfg.cgroupfs, cfg.hierarchy)
	if err != nil {
		return state.Origin{}, err
	}
	ino, err := state.Inode(h.Dir())
	if err != nil {
		return state.Origin{}, err
	}
	return state.Origin{BootID: boot, Hierarchy: h.Name(), Dir: h.Dir(), RootInode: ino}, nil
}

// keepState has the poller write the state from its goroutine, if it is
// kept at all.
func keepState(p *collector.Poller, k *state.Keeper) {
	if !k.Writing() {
		return
	}
	p.AfterPass(k.AfterPass)
	p.BeforeClose(k.Stop)
}
