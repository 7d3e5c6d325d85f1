// Command schedstatd reports, for every cgroup on a node, how long its
// threads ran on a CPU, how long they waited on a runqueue and how many
// timeslices they got, as Prometheus counters.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"
	"github.com/schedstatd/schedstatd/aggregate"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/collector"
	"github.com/schedstatd/schedstatd/cri"
	"github.com/schedstatd/schedstatd/exitcapture"
	"github.com/schedstatd/schedstatd/internal/loadmode"
	"github.com/schedstatd/schedstatd/procsource"
)

// defaultAddress is the default listen address. Port 10271 is outside the
// 9100-9999 range Prometheus exporters have filled and apart from the
// Kubernetes components' 10248-10259.
const defaultAddress = ":10271"

// config is what the flags say.
type config struct {
	web          *web.FlagConfig
	metricsPath  string
	maxRequests  int
	procfs       string
	cgroupfs     string
	hierarchy    string
	interval     time.Duration
	shutdownWait time.Duration
	headerWait   time.Duration
	log          promslog.Config
	// runtimeEndpoint is the container runtime's CRI socket.
	runtimeEndpoint string
	// exitCapture is auto, on or off.
	exitCapture string
	// exitHook is the tracepoint exit capture takes final counters at,
	// as exitcapture.Hooks names it.
	exitHook string
	// collectSource is auto, aggregate, iter or procfs.
	collectSource string
	// bpfPinPath is where the kernel totals' maps are pinned, "" for
	// nowhere.
	bpfPinPath string
	// state is the state file's (state.go).
	state stateConfig
	// latency and preemption turn on the sched_switch program's
	// histogram and preemption attribution (flags.go).
	latency, preemption bool
	// selection picks the cgroups whose series are served (flags.go).
	selection selectionConfig
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// run is main, returning the exit code, so tests can drive it.
func run(args []string) int {
	app := kingpin.New("schedstatd", "Per-cgroup CPU scheduler statistics (run time, runqueue wait, timeslices) as Prometheus metrics.")
	// Help and the version go to stdout, as node_exporter's do; errors to
	// stderr.
	app.UsageWriter(os.Stdout)
	app.UsageTemplate(usageTemplate)
	cfg := addCommonFlags(app)
	serveCmd := app.Command("serve", "Run the daemon: collect and serve metrics (the default command).").Default()
	addServeFlags(serveCmd, cfg)
	topCmd := addTopCommand(app)
	command, err := app.Parse(args)
	if err == nil && command == serveCmd.FullCommand() {
		err = cfg.check()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "schedstatd: %v\n", err)
		return 2
	}
	if cfg.hierarchy == autoHierarchy {
		cfg.hierarchy = ""
	}
	logger := promslog.New(&cfg.log)
	switch command {
	case serveCmd.FullCommand():
		err = serve(cfg, logger)
	case topCmd.cmd.FullCommand():
		return topCmd.run(cfg, logger)
	}
	if err != nil {
		logger.Error("schedstatd failed", "err", err)
		return 1
	}
	return 0
}

// autoHierarchy is the --cgroup.hierarchy that lets Open choose.
const autoHierarchy = "auto"

// hierarchies are the values --cgroup.hierarchy takes: the ones that hold
// every task and a CPU counter (cpu has cpuacct's beside it).
var hierarchies = []string{autoHierarchy, cgroupfs.Unified, "cpuacct", "cpu", "systemd"}

// addCommonFlags adds the flags of both the daemon and top: where the
// kernel's files are, and logging.
func addCommonFlags(app *kingpin.Application) *config {
	cfg := &config{log: promslog.Config{}}
	app.Flag("path.procfs", "procfs mount point: the host's /proc (the daemon needs hostPID in a pod).").Default("/proc").StringVar(&cfg.procfs)
	app.Flag("path.cgroupfs", "cgroup filesystem root: the host's /sys/fs/cgroup.").Default("/sys/fs/cgroup").StringVar(&cfg.cgroupfs)
	enumFlag(app, "cgroup.hierarchy", "Hierarchy to walk: auto takes a v2 root, else v1 cpuacct, cpu, name=systemd; or one of unified, cpuacct, cpu, systemd.", autoHierarchy, &cfg.hierarchy, hierarchies...)
	flag.AddFlags(app, &cfg.log)
	app.Version(version.Print("schedstatd"))
	app.HelpFlag.Short('h')
	return cfg
}

// addServeFlags adds the daemon's own flags to its command, the default
// one, so they need no command name and top's help leaves them out.
func addServeFlags(cmd *kingpin.CmdClause, cfg *config) {
	cfg.web = kingpinflag.AddFlags(cmd, defaultAddress)
	cmd.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&cfg.metricsPath)
	intFlag(cmd, "web.max-requests", "Maximum number of scrapes served at once; more are answered 503. 0 means no limit.", "40", &cfg.maxRequests, 0, 10000)
	durationFlag(cmd, "collect.interval", "Time between background passes; every scrape also runs a fresh pass.", "1s", &cfg.interval, 100*time.Millisecond, time.Hour)
	durationFlag(cmd, "web.read-header-timeout", "How long a client may take to send its request headers before the connection is closed.", "10s", &cfg.headerWait, 100*time.Millisecond, 10*time.Minute)
	durationFlag(cmd, "web.shutdown-timeout", "How long to let scrapes in flight finish on SIGTERM or SIGINT.", "5s", &cfg.shutdownWait, 0, 10*time.Minute)
	enumFlag(cmd, "collect.source", "Where threads are read: aggregate keeps per-cgroup totals in the kernel, a BPF task iterator crediting each thread's increase there, and a pass reads one entry per cgroup (Linux 5.11+, the host PID namespace; with its maps pinned, see bpf.pin-path, and the state file a restart of the daemon loses nothing of live threads); iter reads every thread in one BPF task-iterator read per pass (kernel BTF and CAP_BPF with CAP_PERFMON, or root); procfs reads cgroup thread lists and one /proc file per thread; auto uses aggregate where bpf.pin-path is on a bpf filesystem mounted already (the host's) and it loads, else iter where it loads, else procfs.", "auto", &cfg.collectSource, "auto", "aggregate", "iter", "procfs")
	enumFlag(cmd, "exit-capture", "Count each thread's time up to its exit with an eBPF program on sched_process_free (sched_switch where that cannot attach): auto uses it when kernel BTF and CAP_BPF with CAP_PERFMON (or root) allow, on requires it, off polls only.", string(loadmode.Auto), &cfg.exitCapture, loadmode.Modes()...)
	enumFlag(cmd, "exit-capture.hook", "The tracepoint exit capture takes an exited thread's final counters at: sched_process_free runs once per task and never on a context switch, but on Linux 6.18 the kernel was seen to send nothing there for a few threads in a thousand in some runs, whose time since the last pass is then lost (schedstatd_tasks_retired_unrecorded_total counts them); sched_switch brings every thread, for a few instructions on every context switch of the node; auto takes sched_process_free where it attaches, else sched_switch. The kernel totals take exits at sched_process_free only: with sched_switch, --collect.source=auto does not take them, and aggregate is refused.", exitcapture.HookAuto.String(), &cfg.exitHook, exitcapture.Hooks()...)
	cmd.Flag("bpf.pin-path", "Directory on a bpf filesystem where the aggregate source pins its maps (each thread's last visit, each cgroup's totals), so that a restart of the daemon goes on with them and, with the state file, loses no thread's time; made if missing, with a bpf filesystem mounted at "+aggregate.BPFFSRoot+" first if none is. Empty turns it off.").Default(aggregate.BPFFSRoot + "/schedstatd").StringVar(&cfg.bpfPinPath)
	cmd.Flag("container-runtime-endpoint", "CRI socket of the container runtime, for the container, pod, namespace and image labels: auto takes the first of "+strings.Join(cri.DefaultEndpoints, ", ")+" that exists; none turns the lookup off.").Default(cri.Auto).StringVar(&cfg.runtimeEndpoint)
	addStateFlags(cmd, &cfg.state)
	addSchedLatFlags(cmd, cfg)
	addSelectionFlags(cmd, &cfg.selection)
}

// check refuses flag values that parse but cannot be served.
func (cfg *config) check() error {
	if err := checkTelemetryPath(cfg.metricsPath); err != nil {
		return err
	}
	if err := cfg.selection.compile(); err != nil {
		return err
	}
	if cfg.switchHook() && cfg.collectSource == "aggregate" {
		return fmt.Errorf("--exit-capture.hook=%s: the kernel totals (--collect.source=aggregate) take exits at %s only; --collect.source=iter takes them at either", cfg.exitHook, exitcapture.HookFree)
	}
	return checkListenAddresses(*cfg.web.WebListenAddresses)
}

// switchHook reports whether exit capture, on or auto, was asked to take
// exits at sched_switch.
func (cfg *config) switchHook() bool {
	return cfg.exitHook == exitcapture.HookSwitch.String() && loadmode.Mode(cfg.exitCapture) != loadmode.Off
}

// onHangup logs each SIGHUP that hup delivers until ctx ends, instead of dying of it. There
// is nothing to reload: the web config file is read again for every new
// connection and request (exporter-toolkit does), so SIGHUP only checks
// it and says whether the next connection will take it.
func onHangup(ctx context.Context, hup <-chan os.Signal, webConfig string, logger *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		switch {
		case webConfig == "":
			logger.Info("SIGHUP: nothing to reload (no --web.config.file); the daemon goes on")
		default:
			if err := web.Validate(webConfig); err != nil {
				logger.Error("SIGHUP: the web config file is not valid; connections fail until it is fixed", "file", webConfig, "err", err)
			} else {
				logger.Info("SIGHUP: the web config file is valid; every new connection reads it", "file", webConfig)
			}
		}
	}
}

// serve checks the configuration, then collects and serves until SIGTERM or
// SIGINT.
func serve(cfg *config, logger *slog.Logger) error {
	// Logs go to stderr; if whatever reads it goes away, a write must fail
	// with EPIPE rather than kill the daemon with SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)
	if err := procsource.Check(cfg.procfs); err != nil {
		return err
	}
	if *cfg.web.WebConfigFile != "" {
		if err := web.Validate(*cfg.web.WebConfigFile); err != nil {
			return fmt.Errorf("--web.config.file %s: %w", *cfg.web.WebConfigFile, err)
		}
	}
	src, err := openSources(cfg, logger)
	if err != nil {
		return err
	}
	defer src.close()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go onHangup(ctx, hup, *cfg.web.WebConfigFile, logger)

	table := src.newTable()
	keeper, err := openState(cfg, table, src.rollup, logger)
	if err != nil {
		return err
	}
	defer keeper.Close()
	if err := src.afterRestore(table); err != nil {
		return err
	}
	poller := collector.NewPoller(table, cfg.interval, logger)
	poller.BeforePass(src.beforePass(poller))
	keepState(poller, keeper)
	polled := make(chan error, 1)
	go func() { polled <- poller.Run(ctx) }()
	go src.pairs.Run(ctx, cfg.interval)

	server := &http.Server{
		Handler:           src.withPreemptions(newMux(cfg, poller, logger, src.threadReader(cfg.procfs), append(src.exporterOptions(), collector.WithSelection(cfg.selection.compiled)), append(src.collectors(poller), keeper)...), cfg, poller),
		ReadHeaderTimeout: cfg.headerWait,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	served := make(chan error, 1)
	go func() { served <- web.ListenAndServe(server, cfg.web, logger) }()

	select {
	case err := <-served:
		stop()
		<-polled
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownWait)
	defer cancel()
	if err := server.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		logger.Warn("shutdown", "err", err)
	}
	<-polled
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("stopped; all task fds closed")
	return nil
}
