package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"golang.org/x/text/width"
)

// hostileNames are cgroup names anyone with a delegated subtree can make,
// and the id label's last element each must get: a byte that is not
// UTF-8, control bytes (tab, CR, an escape sequence) with a backslash, and
// wide characters.
var hostileNames = []struct{ dir, label string }{
	{"bad\xffutf8", `bad\xffutf8`},
	{"tab\there\r\x1b[31mred\\x2d", "tab\there\r\x1b[31mred\\\\x2d"},
	{"日本語のコンテナ", "日本語のコンテナ"},
}

// TestHostileCgroupNames makes real cgroups with such names, one with a
// process in it, and checks that a scrape has every series, the daemon's
// own metrics included, with the names made valid and distinct, and that
// promtool finds nothing wrong with it.
func TestHostileCgroupNames(t *testing.T) {
	cg := testcg.Make(t, testcg.Default())
	base := "/" + filepath.Base(cg)
	for _, n := range hostileNames {
		if err := os.Mkdir(filepath.Join(cg, n.dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := testproc.StartIn(t, 2, filepath.Join(cg, hostileNames[0].dir))
	defer p.Stop(t)
	d := startDaemon(t, "--collect.interval=200ms")

	resp, err := http.Get("http://" + d.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s, %v", resp.Status, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	mfs := scrapeBody(t, resp)
	for _, name := range []string{"schedstatd_collections_total", "schedstatd_cgroups", "go_goroutines"} {
		if mfs[name] == nil {
			t.Errorf("no %s in the scrape", name)
		}
	}
	cgroups := int(mfs["schedstatd_cgroups"].GetMetric()[0].GetGauge().GetValue())
	for _, name := range []string{"container_cpu_schedstat_run_seconds_total", "container_cpu_schedstat_runqueue_seconds_total",
		"container_cpu_schedstat_run_periods_total", "container_schedstat_tasks"} {
		if n := len(mfs[name].GetMetric()); n < cgroups-5 || n > cgroups+5 {
			t.Errorf("%s has %d series, while %d cgroups were walked", name, n, cgroups)
		}
	}
	for _, n := range hostileNames {
		id := base + "/" + n.label
		if _, ok := value(mfs, "container_cpu_schedstat_run_seconds_total", id); !ok {
			t.Errorf("no series with id=%q", id)
		}
	}
	if tasks, _ := value(mfs, "container_schedstat_tasks", base+"/"+hostileNames[0].label); int(tasks) != len(p.Threads(t)) {
		t.Errorf("tasks of %q = %v, want %d", hostileNames[0].label, tasks, len(p.Threads(t)))
	}
	if strings.Contains(d.log(), "panic") {
		t.Errorf("the daemon logged a panic:\n%s", d.log())
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		e2e.Unavailable(t, "promtool is not installed (Debian package prometheus)")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// hostileTree makes a test cgroup holding a cgroup of each hostile name
// and one with a name of 250 bytes, and returns the test cgroup's id.
func hostileTree(t *testing.T) (base, long string) {
	t.Helper()
	cg := testcg.Make(t, testcg.Default())
	long = "long-" + strings.Repeat("x", 240) + "-end"
	for _, n := range append([]string{long}, hostileDirs()...) {
		if err := os.Mkdir(filepath.Join(cg, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return "/" + filepath.Base(cg), long
}

func hostileDirs() []string {
	var dirs []string
	for _, n := range hostileNames {
		dirs = append(dirs, n.dir)
	}
	return dirs
}

// cellWidth is how many terminal cells s takes (wide characters two).
func cellWidth(s string) int {
	n := 0
	for _, r := range s {
		switch width.LookupRune(r).Kind() {
		case width.EastAsianWide, width.EastAsianFullwidth:
			n += 2
		default:
			n++
		}
	}
	return n
}

// TestTopHostileNamesInTmux shows such cgroups in top's live view in a
// real terminal: no escape sequence of a name reaches the terminal (the
// pane has no red), a CR does not fold a row, the rows line up in cells
// with wide characters, and the long name is cut with an ellipsis.
func TestTopHostileNamesInTmux(t *testing.T) {
	e2e.RequireRoot(t)
	x := newTmux(t)
	base, _ := hostileTree(t)
	d := startDaemon(t, "--collect.interval=200ms")
	script := strconv.Quote(binary(t)) + " top --from=http://" + d.addr + "/metrics --interval=500ms --view=cgroups --sort=name --filter=" + strconv.Quote(base[1:])
	x.run(false, "new-session", "-d", "-s", "top", "-x", "160", "-y", "30", "/bin/sh", "-c", script)
	lines := x.await("the five test cgroups", func(_ []string, s string) bool {
		return strings.Contains(s, "5 of ") && strings.Contains(s, "node  run ")
	})
	var rows []string
	for _, l := range lines {
		if strings.Contains(l, base) || strings.HasPrefix(l, "...") || strings.HasPrefix(l, "CGROUP") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 6 {
		t.Fatalf("want the header and 5 rows, got:\n%s", strings.Join(lines, "\n"))
	}
	for _, r := range rows {
		if cellWidth(r) != cellWidth(rows[0]) || cellWidth(r) > 160 {
			t.Errorf("row %q is %d cells, the header %d", r, cellWidth(r), cellWidth(rows[0]))
		}
	}
	screen := strings.Join(lines, "\n")
	for _, want := range []string{`/bad\xffutf8`, `/tab\there\r\x1b[31mred\\x2d`, "/日本語のコンテナ", "xxxxx-end"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the pane does not show %q:\n%s", want, screen)
		}
	}
	colours, _ := x.run(false, "capture-pane", "-p", "-e", "-t", "top")
	if strings.Contains(colours, "\x1b[31m") {
		t.Errorf("a name's escape sequence reached the terminal:\n%q", colours)
	}
}

// TestTopOnceHostileNames prints one table to a pipe: the long name does
// not pad every row to its width, and no control byte is printed.
func TestTopOnceHostileNames(t *testing.T) {
	base, _ := hostileTree(t)
	d := startDaemon(t, "--collect.interval=200ms")
	r := runTop(t, "--once", "--interval=300ms", "--view=cgroups", "--filter="+base[1:], "--from=http://"+d.addr+"/metrics")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	for _, l := range lines[3:] {
		if n := cellWidth(l); n > 160 {
			t.Errorf("a line of %d cells: %q", n, l)
		}
		if strings.ContainsAny(l, "\t\r\x1b") {
			t.Errorf("a control byte in %q", l)
		}
	}
	if !strings.Contains(r.stdout, "\n...xxxxx") || !strings.Contains(r.stdout, `\x1b[31mred`) {
		t.Errorf("output:\n%s", r.stdout)
	}
}
