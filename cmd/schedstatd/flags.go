package main

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/schedstatd/schedstatd/collector"
)

// durationValue is a duration flag that must lie in [min, max]; its
// errors name the flag and the range, on one line.
type durationValue struct {
	name     string
	v        *time.Duration
	min, max time.Duration
}

// durationFlag adds a duration flag of c with a default and a range.
func durationFlag(c flagger, name, help, def string, v *time.Duration, min, max time.Duration) {
	c.Flag(name, help+" From "+short(min)+" to "+short(max)+".").Default(def).SetValue(&durationValue{name: name, v: v, min: min, max: max})
}

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("--%s=%s: not a duration such as 500ms, 10s or 1m", d.name, s)
	}
	if v < d.min || v > d.max {
		return fmt.Errorf("--%s=%s: out of range: from %s to %s", d.name, s, short(d.min), short(d.max))
	}
	*d.v = v
	return nil
}

func (d *durationValue) String() string { return short(*d.v) }

// short formats d without zero units: 1h, not 1h0m0s.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// intValue is an integer flag that must lie in [min, max].
type intValue struct {
	name     string
	v        *int
	min, max int
}

// intFlag adds an integer flag of c with a default and a range.
func intFlag(c flagger, name, help, def string, v *int, min, max int) {
	c.Flag(name, help+fmt.Sprintf(" From %d to %d.", min, max)).Default(def).SetValue(&intValue{name: name, v: v, min: min, max: max})
}

func (i *intValue) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("--%s=%s: not an integer", i.name, s)
	}
	if v < i.min || v > i.max {
		return fmt.Errorf("--%s=%s: out of range: from %d to %d", i.name, s, i.min, i.max)
	}
	*i.v = v
	return nil
}

func (i *intValue) String() string { return strconv.Itoa(*i.v) }

// enumValue is a flag that takes one of a few words.
type enumValue struct {
	name   string
	v      *string
	values []string
}

// enumFlag adds a flag of c that takes one of values.
func enumFlag(c flagger, name, help, def string, v *string, values ...string) *kingpin.FlagClause {
	f := c.Flag(name, help)
	f.Default(def).SetValue(&enumValue{name: name, v: v, values: values})
	return f
}

func (e *enumValue) Set(s string) error {
	if !slices.Contains(e.values, s) {
		return fmt.Errorf("--%s=%s: not one of %s", e.name, s, strings.Join(e.values, ", "))
	}
	*e.v = s
	return nil
}

func (e *enumValue) String() string { return *e.v }

// flagger is where flags are added: the application or a command.
type flagger interface {
	Flag(name, help string) *kingpin.FlagClause
}

// checkTelemetryPath accepts a path the HTTP mux serves as one exact
// path: a slash, then letters, digits and - . _ ~, in clean segments, and
// not /healthz.
func checkTelemetryPath(p string) error {
	bad := func(why string) error { return fmt.Errorf("--web.telemetry-path=%q: %s", p, why) }
	switch {
	case p == "/":
		return nil
	case !strings.HasPrefix(p, "/"):
		return bad("must start with /, such as /metrics")
	case p == "/healthz":
		return bad("/healthz is the health endpoint")
	case p == collector.TasksPath:
		return bad(collector.TasksPath + " is the tasks API")
	case strings.HasSuffix(p, "/") || strings.Contains(p, "//"):
		return bad("must not end in / or hold an empty segment")
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "." || seg == ".." {
			return bad("must not hold . or .. segments")
		}
	}
	for _, r := range p {
		if !(r == '/' || r == '-' || r == '.' || r == '_' || r == '~' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return bad(fmt.Sprintf("%q is not allowed: only letters, digits, /, -, ., _ and ~", r))
		}
	}
	return nil
}

// checkListenAddresses refuses an empty --web.listen-address, which would
// listen on a random port on all interfaces, and one that is not
// host:port.
func checkListenAddresses(addrs []string) error {
	for _, a := range addrs {
		if strings.HasPrefix(a, "vsock://") {
			continue
		}
		if _, port, err := net.SplitHostPort(a); a == "" || err != nil || port == "" {
			return fmt.Errorf("--web.listen-address=%q: want host:port or :port, such as %s or 127.0.0.1:10271", a, defaultAddress)
		}
	}
	return nil
}

// addSchedLatFlags adds the flags of the sched_switch program: both are
// off unless asked for, as the program runs on every context switch.
func addSchedLatFlags(cmd flagger, cfg *config) {
	cmd.Flag("collect.latency", "Serve a histogram of every runqueue wait per cgroup (container_cpu_schedstat_runqueue_latency_seconds), from an eBPF program on sched_switch: kernel BTF, Linux 5.11 or later (BPF task storage) and CAP_BPF with CAP_PERFMON (or root); each context switch pays for it (see the README).").BoolVar(&cfg.latency)
	cmd.Flag("collect.preemption", "Count per cgroup the preemptions of its tasks by who ran next (same cgroup, another cgroup, a kernel thread, idle) and serve the busiest (victim, preemptor) pairs of the last --collect.interval at /api/v1/preemptions; same program and needs as --collect.latency.").BoolVar(&cfg.preemption)
}

// selectionConfig is what the cgroup selection flags say.
type selectionConfig struct {
	include, exclude []string
	maxDepth         int
	// compiled is made by check.
	compiled *collector.Selection
}

// addSelectionFlags adds the flags that pick the cgroups whose series are
// served, as cAdvisor's users bound a node's series.
func addSelectionFlags(cmd flagger, s *selectionConfig) {
	cmd.Flag("collect.cgroups.include", "Serve the series of the cgroups whose id (path, / for the root) matches this RE2 regular expression, anchored at both ends, such as '/kubepods.*'; repeat for more. Default: every cgroup. Series of a served cgroup still include all its descendants.").PlaceHolder(`""`).StringsVar(&s.include)
	cmd.Flag("collect.cgroups.exclude", "Do not serve the series of the cgroups whose id matches this anchored RE2 regular expression, such as '/system\\.slice(/.*)?' for that subtree; repeat for more. Excluded cgroups' time still counts in their served ancestors.").PlaceHolder(`""`).StringsVar(&s.exclude)
	intFlag(cmd, "collect.cgroups.max-depth", "Serve the series of cgroups at most this deep (/ is 0, /kubepods.slice 1); -1 serves every depth.", "-1", &s.maxDepth, -1, 1000)
}

// compile checks and compiles the selection, naming the flag of a pattern
// that does not compile.
func (s *selectionConfig) compile() error {
	for flag, pats := range map[string][]string{"collect.cgroups.include": s.include, "collect.cgroups.exclude": s.exclude} {
		for _, p := range pats {
			if _, err := collector.CompileSelection([]string{p}, nil, -1); err != nil {
				return fmt.Errorf("--%s=%q: %v", flag, p, err)
			}
		}
	}
	if len(s.include) == 0 && len(s.exclude) == 0 && s.maxDepth < 0 {
		return nil // every cgroup: no selection to run
	}
	var err error
	s.compiled, err = collector.CompileSelection(s.include, s.exclude, s.maxDepth)
	return err
}
