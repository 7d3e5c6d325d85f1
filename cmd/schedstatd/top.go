package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/top"
	"golang.org/x/term"
)

// minTopTimeout is the least time one sample over HTTP may take; the
// daemon is asked to answer within half of it.
const minTopTimeout = 10 * time.Second

// topCommand is the top subcommand and its flags.
type topCommand struct {
	cmd        *kingpin.CmdClause
	from       string
	httpConfig string
	once       bool
	output     string
	sort       string
	reverse    bool
	view       string
	filter     string
	interval   time.Duration
	cgroup     string
	pid        int
}

// addTopCommand adds the top subcommand to app.
func addTopCommand(app *kingpin.Application) *topCommand {
	c := &topCommand{}
	c.cmd = app.Command("top", "Show which cgroups, containers or pods wait for a CPU, live: read a daemon's metrics (--from) or, without one, count on this node.")
	c.cmd.Flag("from", "Metrics URL of a running daemon, such as http://localhost:10271/metrics. Without it, top runs passes itself (as root) with --path.procfs, --path.cgroupfs and --cgroup.hierarchy.").PlaceHolder("URL").StringVar(&c.from)
	c.cmd.Flag("http.config.file", "HTTP client config for --from, in Prometheus's format (basic_auth, tls_config with ca_file, cert_file, key_file): how to pass the daemon's web config.").PlaceHolder("FILE").StringVar(&c.httpConfig)
	c.cmd.Flag("once", "Take two samples one interval apart, print one table and exit.").BoolVar(&c.once)
	enumFlag(c.cmd, "output", "Format of --once: table or json (json implies --once).", top.FormatTable, &c.output, top.FormatTable, top.FormatJSON)
	enumFlag(c.cmd, "sort", "Column to sort by, largest first: wait, run, ratio (wait per run), slices, tasks; or name.", top.ByWait.String(), &c.sort, top.SortNames()...)
	c.cmd.Flag("reverse", "Reverse the sort.").BoolVar(&c.reverse)
	enumFlag(c.cmd, "view", "What a row is: containers, pods, cgroups, or auto (containers when they run and wait at least half of what the node does, else cgroups).", top.ViewAuto.String(), &c.view, top.ViewNames()...)
	c.cmd.Flag("filter", "Show only rows whose name, cgroup or Kubernetes names contain this text (any case).").StringVar(&c.filter)
	durationFlag(c.cmd, "interval", "Time between samples.", "2s", &c.interval, 100*time.Millisecond, time.Hour)
	c.cmd.Flag("cgroup", "Show the processes of this cgroup and its descendants: its path (the id label, such as /kubepods/burstable/pod<uid>/<container id>) or its kernel id (the inode of its directory).").PlaceHolder("ID").StringVar(&c.cgroup)
	intFlag(c.cmd, "pid", "With --cgroup: show the threads of this process instead.", "0", &c.pid, 0, 1<<22)
	return c
}

// run runs top and returns the exit code.
func (c *topCommand) run(cfg *config, logger *slog.Logger) int {
	view, err := top.ParseView(c.view)
	if err != nil {
		fmt.Fprintf(os.Stderr, "schedstatd top: %v\n", err)
		return 2
	}
	sort, err := top.ParseSortKey(c.sort)
	if err != nil {
		fmt.Fprintf(os.Stderr, "schedstatd top: %v\n", err)
		return 2
	}
	st := top.State{View: view, Sort: sort, Reverse: c.reverse, Filter: c.filter}
	if c.pid != 0 && c.cgroup == "" {
		fmt.Fprintln(os.Stderr, "schedstatd top: --pid needs --cgroup, the cgroup the process is in")
		return 2
	}
	if c.cgroup != "" {
		st.Drill = []top.Step{{Target: top.Target{IDs: []string{c.cgroup}, Label: c.cgroup}}}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	src, name, err := c.source(cfg, logger)
	if err != nil {
		fmt.Fprintf(os.Stderr, "schedstatd top: %v\n", err)
		return 1
	}
	defer src.Close()
	if c.pid != 0 {
		if st, err = top.OpenProcess(ctx, src, st, int32(c.pid)); err != nil {
			fmt.Fprintf(os.Stderr, "schedstatd top: %v\n", err)
			return 1
		}
	}
	opt := top.Options{Source: name, Interval: c.interval}
	if c.once || c.output == top.FormatJSON {
		width := 0
		if w, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil {
			width = w
		}
		err = top.Once(ctx, src, st, opt, os.Stdout, width, c.output)
	} else {
		err = top.RunTerminal(ctx, src, st, opt, os.Stdin, os.Stdout)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "schedstatd top: %v\n", err)
		return 1
	}
	return 0
}

// source returns where samples come from and its name: the daemon at
// --from, or passes of a task table of this node.
func (c *topCommand) source(cfg *config, logger *slog.Logger) (top.Source, string, error) {
	if c.from != "" {
		u, err := top.ParseURL(c.from)
		if err != nil {
			return nil, "", err
		}
		client, err := top.NewHTTPClient(c.httpConfig, max(minTopTimeout, c.interval))
		if err != nil {
			return nil, "", err
		}
		return &top.HTTPSource{URL: u, Client: client}, u.Redacted(), nil
	}
	procs, err := procsource.New(procsource.Config{Root: cfg.procfs, CgroupRoot: cfg.cgroupfs, Logger: logger})
	if err != nil {
		return nil, "", err
	}
	h, err := cgroupfs.Open(cfg.cgroupfs, cfg.hierarchy)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", top.ErrNoCgroups, err)
	}
	table := container.NewTable(h, procs)
	return &top.LocalSource{Table: table, Dir: h.Dir(), Proc: cfg.procfs}, "this node, " + h.Dir(), nil
}
