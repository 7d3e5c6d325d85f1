package main

import (
	"bytes"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
)

// TestFlagErrors gives the daemon each flag value an operator may get
// wrong: it must exit 2 at once with one line on stderr that names the
// flag and what it accepts, not a stack trace, and serve nothing.
func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--web.telemetry-path="}, `--web.telemetry-path="": must start with /`},
		{[]string{"--web.telemetry-path=metrics"}, `--web.telemetry-path="metrics": must start with /`},
		{[]string{"--web.telemetry-path=/healthz"}, `--web.telemetry-path="/healthz": /healthz is the health endpoint`},
		{[]string{"--web.telemetry-path=/api/v1/cgroups/tasks"}, `--web.telemetry-path="/api/v1/cgroups/tasks": /api/v1/cgroups/tasks is the tasks API`},
		{[]string{"--web.telemetry-path=/a b"}, `--web.telemetry-path="/a b": ' ' is not allowed`},
		{[]string{"--web.telemetry-path=GET /x"}, `--web.telemetry-path="GET /x": must start with /`},
		{[]string{"--web.telemetry-path=/x/{y}"}, `--web.telemetry-path="/x/{y}": '{' is not allowed`},
		{[]string{"--web.telemetry-path=/metrics/"}, `--web.telemetry-path="/metrics/": must not end in /`},
		{[]string{"--web.listen-address="}, `--web.listen-address="": want host:port`},
		{[]string{"--web.max-requests=-1"}, "--web.max-requests=-1: out of range: from 0 to 10000"},
		{[]string{"--web.max-requests=many"}, "--web.max-requests=many: not an integer"},
		{[]string{"--web.read-header-timeout=-1s"}, "--web.read-header-timeout=-1s: out of range: from 100ms to 10m"},
		{[]string{"--web.shutdown-timeout=-5s"}, "--web.shutdown-timeout=-5s: out of range: from 0s to 10m"},
		{[]string{"--collect.interval=1ns"}, "--collect.interval=1ns: out of range: from 100ms to 1h"},
		{[]string{"--collect.interval=0s"}, "--collect.interval=0s: out of range: from 100ms to 1h"},
		{[]string{"--collect.interval=1000000h"}, "--collect.interval=1000000h: out of range: from 100ms to 1h"},
		{[]string{"--collect.interval=abc"}, "--collect.interval=abc: not a duration"},
		{[]string{"--cgroup.hierarchy=memory"}, "--cgroup.hierarchy=memory: not one of auto, unified, cpuacct, cpu, systemd"},
		{[]string{"--exit-capture=maybe"}, "--exit-capture=maybe: not one of auto, on, off"},
		{[]string{"--collect.source=bpf"}, "--collect.source=bpf: not one of auto, aggregate, iter, procfs"},
		{[]string{"--exit-capture.hook=exit"}, "--exit-capture.hook=exit: not one of auto, sched_process_free, sched_switch"},
		{[]string{"--exit-capture.hook=sched_switch", "--collect.source=aggregate"}, "--exit-capture.hook=sched_switch: the kernel totals (--collect.source=aggregate) take exits at sched_process_free only"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			// A real address beside it: the bad flag alone is refused.
			cmd := exec.Command(binary(t), append([]string{"--web.listen-address=" + freeAddr(t)}, tc.args...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("exit: %v, want status 2; stderr:\n%s", err, stderr.String())
			}
			if got := stderr.String(); got != "schedstatd: "+strings.TrimPrefix(got, "schedstatd: ") || strings.Count(got, "\n") != 1 || !strings.Contains(got, tc.want) {
				t.Errorf("stderr %q, want one line with %q", got, tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q", stdout.String())
			}
		})
	}
}

// TestFlagsAccepted: the values the README documents start the daemon.
func TestFlagsAccepted(t *testing.T) {
	e2e.RequireRoot(t)
	for _, args := range [][]string{
		{"--cgroup.hierarchy=auto"},
		{"--web.telemetry-path=/custom/metrics-path_1.x"},
		{"--web.shutdown-timeout=0s", "--web.max-requests=0", "--collect.interval=100ms"},
	} {
		d := startDaemon(t, args...)
		path := "/metrics"
		if strings.HasPrefix(args[0], "--web.telemetry-path=") {
			path = strings.TrimPrefix(args[0], "--web.telemetry-path=")
		}
		if mfs := scrape(t, http.DefaultClient, "http://"+d.addr+path); mfs["schedstatd_collections_total"] == nil {
			t.Errorf("%v: no schedstatd_collections_total", args)
		}
		d.stop(t)
	}
}

func TestSelectionFlags(t *testing.T) {
	none := selectionConfig{maxDepth: -1}
	if err := none.compile(); err != nil || none.compiled != nil {
		t.Errorf("no selection flags: %v, %v; want no selection to run", none.compiled, err)
	}
	bad := selectionConfig{exclude: []string{"/a", "(x"}, maxDepth: -1}
	if err := bad.compile(); err == nil || !strings.Contains(err.Error(), `--collect.cgroups.exclude="(x"`) {
		t.Errorf("a bad pattern: %v, want an error naming the flag and the pattern", err)
	}
	sel := selectionConfig{include: []string{"/kubepods.*"}, maxDepth: 2}
	if err := sel.compile(); err != nil {
		t.Fatal(err)
	}
	if !sel.compiled.Selected("/kubepods/pod1") || sel.compiled.Selected("/kubepods/pod1/c") || sel.compiled.Selected("/system.slice") {
		t.Errorf("selection %+v picks the wrong cgroups", sel.compiled)
	}
}
