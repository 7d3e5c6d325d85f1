package main

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/version"
	"github.com/schedstatd/schedstatd/aggregate"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/collector"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/cri"
	"github.com/schedstatd/schedstatd/exitcapture"
	"github.com/schedstatd/schedstatd/internal/loadmode"
	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/schedlat"
	"github.com/schedstatd/schedstatd/taskiter"
)

// sources are what the daemon reads: the cgroups it lists and the tasks it
// reads, the exit source and the container runtime it asks for labels.
type sources struct {
	// lister and tasks feed the table: the hierarchy's thread lists and
	// procfs, or the task iterator.
	lister cgroupfs.Lister
	tasks  container.TaskOpener
	iter   *taskiter.Source  // nil when procfs or the kernel totals are the source
	agg    *aggregate.Source // nil unless the kernel keeps the totals
	// fds is the budget of kept fds: the procfs source's tasks and the
	// walk's cgroup counter files.
	fds *procsource.FDBudget
	// hier is the walked hierarchy, which keeps counter files open.
	hier    *cgroupfs.Hierarchy
	hostPID bool
	// pressure is set when the kernel reports CPU pressure for cgroups.
	pressure bool
	exits    *exitcapture.Source // nil when polling only
	runtime  *cri.Client         // nil when no runtime is asked
	// sched is the sched_switch program of --collect.latency and
	// --collect.preemption, nil when neither is on or it is unavailable;
	// rollup and pairs serve its counts.
	sched            *schedlat.Source
	schedUnavailable bool
	rollup           *schedlat.Rollup
	pairs            *schedlat.Tracker
}

// openSources opens everything the flags name, failing with the path or
// value named, and says once in the log what it could not have.
func openSources(cfg *config, logger *slog.Logger) (*sources, error) {
	h, err := cgroupfs.Open(cfg.cgroupfs, cfg.hierarchy)
	if err != nil {
		return nil, err
	}
	src := &sources{}
	if src.hostPID, err = cgroupfs.InitialPIDNamespace(cfg.procfs); err != nil {
		return nil, err
	}
	if !src.hostPID {
		logger.Warn("not in the host PID namespace: tasks of other namespaces are invisible in cgroup files; run the pod with hostPID: true")
	}
	if src.pressure = h.PressureFile() != ""; !src.pressure {
		logger.Warn("no CPU pressure (PSI) for cgroups: the kernel was booted with psi=0 or built without CONFIG_PSI, cgroup.pressure is 0, or there is no cgroup v2 hierarchy; container_cpu_schedstat_pressure_* series are not served", "unified", h.UnifiedDir())
	}
	procs, err := procsource.New(procsource.Config{Root: cfg.procfs, CgroupRoot: cfg.cgroupfs, Logger: logger})
	if err != nil {
		return nil, err
	}
	// The walk keeps each cgroup's counter files open out of the same
	// budget as the task fds (a quarter of it while tasks keep fds too).
	h.KeepFiles(procs.Budget)
	src.lister, src.tasks, src.fds, src.hier = h, procs, procs.Budget, h
	// The kernel totals, when asked for, take a task's last stretch at
	// sched_process_free themselves, unless exit capture is off, and
	// split a moved task's time at the move, as exit capture's move
	// records do for the task sources.
	exits := loadmode.Mode(cfg.exitCapture) != loadmode.Off
	aggMode := aggregateMode(cfg.collectSource, cfg.bpfPinPath)
	if cfg.switchHook() {
		aggMode = loadmode.Off // the kernel totals take exits at sched_process_free only (config.check)
	}
	if src.agg, err = aggregate.Select(aggMode, aggregate.Options{Hierarchy: h, Exits: exits, Moves: exits, PinPath: cfg.bpfPinPath, Logger: logger}, logger); err != nil {
		src.close()
		return nil, fmt.Errorf("--collect.source=%s: %w", cfg.collectSource, err)
	}
	if src.agg != nil {
		src.lister, src.tasks = src.agg.Lister(), nil
		// No task keeps an fd: the cgroups' counter files may take the
		// whole budget.
		procs.Budget.CgroupShare = 0
	} else {
		if src.iter, err = taskiter.Select(iterMode(cfg.collectSource), taskiter.Options{Hierarchy: h}, logger); err != nil {
			src.close()
			return nil, fmt.Errorf("--collect.source=%s: %w", cfg.collectSource, err)
		}
		if src.iter != nil {
			src.lister, src.tasks = src.iter.Lister(), src.iter.Opener()
			// No task keeps an fd: the cgroups' counter files may take the
			// whole budget.
			procs.Budget.CgroupShare = 0
		}
		if src.exits, err = exitcapture.Select(loadmode.Mode(cfg.exitCapture), exitcapture.Options{Hierarchy: h, Hook: exitHook(cfg.exitHook)}, logger); err != nil {
			src.close()
			return nil, err // it names --exit-capture=on already
		}
	}
	src.sched, src.schedUnavailable = schedlat.Select(schedlat.Options{Hierarchy: h, Latency: cfg.latency, Preemption: cfg.preemption}, logger)
	src.rollup, src.pairs = schedlat.NewRollup(nil), schedlat.NewTracker(src.sched, 0)
	if src.sched != nil {
		src.rollup = schedlat.NewRollup(src.sched)
	}
	if endpoint := cri.Resolve(cfg.runtimeEndpoint); !cri.Disabled(endpoint) {
		// New does not wait for the runtime; a runtime that is down
		// only leaves labels empty.
		if src.runtime, err = cri.New(cri.Config{Endpoint: endpoint, Logger: logger}); err != nil {
			src.close()
			return nil, fmt.Errorf("--container-runtime-endpoint: %w", err)
		}
	} else {
		logger.Info("no container runtime to ask: container, pod, namespace and image labels stay empty", "container_runtime_endpoint", cfg.runtimeEndpoint)
	}
	logger.Info("starting schedstatd", "version", version.Info(), "hierarchy", h.Name(), "cgroup_version", h.Version().String(),
		"dir", h.Dir(), "bandwidth", h.BandwidthFile(), "pressure", h.PressureFile(), "interval", cfg.interval, "task_fd_budget", procs.Budget.Max, "task_source", src.name(), "task_iterator", src.iter != nil, "exit_capture", src.exits != nil || src.agg.HasExitHook(), "exit_hook", src.exitHook(), "move_records", src.exits.Migrations(), "container_runtime", src.runtime != nil, "latency", src.sched.Latency(), "preemption", src.sched.Preemption())
	return src, nil
}

// beforePass is what poller runs before each pass: the move and exit
// records are fed to the table, and the runtime is told of the last pass's cgroups, so
// a new container is named before the first scrape that shows it.
func (s *sources) beforePass(poller *collector.Poller) func(*container.Table) {
	return func(t *container.Table) {
		s.exits.Feed(t)
		s.runtime.Notice(poller.Last())
	}
}

// exporterOptions are the options of the container series' exporter.
func (s *sources) exporterOptions() []collector.Option {
	var opts []collector.Option
	if s.runtime != nil {
		opts = append(opts, collector.WithLabeler(s.runtime))
	}
	if s.sched != nil {
		opts = append(opts, collector.WithSchedLatency(s.rollup))
	}
	return opts
}

// collectors are the self metrics of the sources.
func (s *sources) collectors(poller *collector.Poller) []prometheus.Collector {
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "schedstatd_host_pid_namespace",
			Help: "1 if the daemon runs in the host's PID namespace and sees every task; 0 means hostPID: true is missing.",
		}, func() float64 { return boolFloat(s.hostPID) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "schedstatd_cpu_pressure_enabled",
			Help: "1 if the kernel reports CPU pressure (PSI) for cgroups and the container_cpu_schedstat_pressure_* series are served; 0 with psi=0, a kernel without CONFIG_PSI, or no cgroup v2 hierarchy.",
		}, func() float64 { return boolFloat(s.pressure) }),
		exitcapture.NewCollector(s.exits, s.agg, func() uint64 { return poller.Last().Counters.UnattributedExits }),
		taskiter.NewCollectorInUse(s.iter, s.name()),
		aggregate.NewCollector(s.agg),
		procsource.NewCollector(s.fds),
		schedlat.NewCollector(s.rollup, s.schedUnavailable),
	}
	if s.runtime != nil {
		cs = append(cs, s.runtime)
	}
	return cs
}

// close releases the task iterator, the exit source, the runtime client
// and the walk's kept counter files. The task table closes its own fds
// when the poller stops; close must run after it has.
func (s *sources) close() {
	if s.agg != nil {
		s.agg.Close()
	}
	if s.hier != nil {
		s.hier.Close()
	}
	if s.iter != nil {
		s.iter.Close()
	}
	if s.exits != nil {
		s.exits.Close()
	}
	if s.runtime != nil {
		s.runtime.Close()
	}
	s.sched.Close()
}

// iterMode maps --collect.source to the iterator's mode: iter requires it,
// procfs never loads it.
func iterMode(source string) loadmode.Mode {
	switch source {
	case "iter":
		return loadmode.On
	case "procfs":
		return loadmode.Off
	}
	return loadmode.Auto
}

// exitHook names the tracepoint a task's last stretch is taken at, or ""
// when exit capture is off.
func (s *sources) exitHook() string {
	switch {
	case s.agg.HasExitHook():
		return exitcapture.HookFree.String()
	case s.exits != nil:
		return s.exits.Hook().String()
	}
	return ""
}

// name is the task source in use, as schedstatd_task_source names it.
func (s *sources) name() string {
	switch {
	case s.agg != nil:
		return "aggregate"
	case s.iter != nil:
		return "iter"
	}
	return "procfs"
}

// newTable returns the table the sources feed: one of per-cgroup totals
// over the kernel's, or one of tasks.
func (s *sources) newTable() *container.Table {
	if s.agg != nil {
		return container.NewCgroupTable(s.lister, s.agg)
	}
	return container.NewTable(s.lister, s.tasks)
}

// aggregateMode maps --collect.source and --bpf.pin-path to the kernel
// totals' mode: aggregate requires them; auto takes them where they load
// and pinPath is on a bpf filesystem mounted already, since without
// their pins a restart of the daemon loses what live threads waited
// since the last state write, which the task sources do not.
func aggregateMode(source, pinPath string) loadmode.Mode {
	switch {
	case source == "aggregate":
		return loadmode.On
	case source == "auto" && aggregate.Persistent(pinPath):
		return loadmode.Auto
	}
	return loadmode.Off
}

// afterRestore readies the kernel totals for the first pass of table, once
// it was restored from the state file if there was one: a table that goes
// on from the pinned totals it credited reads on, any other restored one
// primes them, as the state has counted every task up to the save
// (aggregate.Source.Begin).
func (s *sources) afterRestore(table *container.Table) error {
	if s.agg == nil {
		return nil
	}
	if err := s.agg.Begin(table); err != nil {
		return fmt.Errorf("--collect.source=aggregate: %w", err)
	}
	return nil
}

// exitHook is the exit hook name names; the flag has been checked to be
// one of exitcapture.Hooks, and anything else is HookAuto.
func exitHook(name string) exitcapture.Hook {
	h, _ := exitcapture.ParseHook(name)
	return h
}
