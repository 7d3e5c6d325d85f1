package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"golang.org/x/crypto/bcrypt"
)

// topRun is the result of one run of the top command.
type topRun struct {
	stdout, stderr string
	code           int
}

// runTop runs the binary's top command with args, without a terminal,
// and waits at most two minutes for it.
func runTop(t *testing.T, args ...string) topRun {
	t.Helper()
	bin := binary(t) // built first: a cold build may take longer than the run may
	// A bound for a top that hangs, not a target: in the kernel matrix's
	// VMs a run of two samples takes tens of seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"top"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := topRun{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("top %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("top %v did not finish in time", args)
	}
	return r
}

// starvedPair makes two cgroups in the v1 cpuacct hierarchy, the one the
// daemon walks on this machine: the first with six spinning threads, more
// than this machine's cores, the other with one. Every thread gets about
// an equal share, so the first cgroup waits several times longer per
// second. It returns their ids.
func starvedPair(t *testing.T) (starved, light string) {
	t.Helper()
	a := testcg.Make(t, testcg.Default())
	b := testcg.Make(t, testcg.Default())
	// With GOMAXPROCS at the core count, the Go runtime would let only
	// two of the six locked threads run at once and park the rest
	// outside the kernel's runqueue. The helpers inherit this.
	t.Setenv("GOMAXPROCS", "16")
	testproc.StartIn(t, 6, a)
	testproc.StartIn(t, 1, b)
	return "/" + filepath.Base(a), "/" + filepath.Base(b)
}

// rowIndex returns the index of the line that starts with the cgroup id,
// or -1.
func rowIndex(lines []string, id string) int {
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && f[0] == id {
			return i
		}
	}
	return -1
}

// TestTopOnceListsTheStarvedFirst runs `top --once` against a real daemon
// and with passes of its own, with a starved cgroup and a light one.
func TestTopOnceListsTheStarvedFirst(t *testing.T) {
	e2e.RequireRoot(t)
	starved, light := starvedPair(t)
	d := startDaemon(t, "--collect.interval=200ms")
	url := "http://" + d.addr + "/metrics"

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"daemon", []string{"--from=" + url}},
		{"local passes", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runTop(t, append([]string{"--once", "--interval=1s", "--view=cgroups"}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			lines := strings.Split(r.stdout, "\n")
			i, j := rowIndex(lines, starved), rowIndex(lines, light)
			if i < 0 || j < 0 {
				t.Fatalf("no row of %s or %s:\n%s", starved, light, r.stdout)
			}
			if i > j {
				t.Errorf("%s (6 busy threads) is listed after %s (1):\n%s", starved, light, r.stdout)
			}
			if !strings.Contains(lines[rowIndex(lines, "CGROUP")], "WAIT/s*") {
				t.Errorf("the table is not marked as sorted by wait:\n%s", r.stdout)
			}
			t.Logf("\n%s", r.stdout)
		})
	}

	t.Run("json", func(t *testing.T) {
		r := runTop(t, "--from="+url, "--output=json", "--interval=1s", "--view=cgroups")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var out struct {
			View string `json:"view"`
			Rows []struct {
				Name  string   `json:"name"`
				Wait  *float64 `json:"runqueue_seconds_per_second"`
				Run   *float64 `json:"run_seconds_per_second"`
				Tasks float64  `json:"tasks"`
			} `json:"rows"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("%v:\n%s", err, r.stdout)
		}
		i, j := -1, -1
		for k, row := range out.Rows {
			switch row.Name {
			case starved:
				i = k
			case light:
				j = k
			}
		}
		if i < 0 || j < 0 || i > j {
			t.Fatalf("rows %d (%s) and %d (%s) in:\n%s", i, starved, j, light, r.stdout)
		}
		s, l := out.Rows[i], out.Rows[j]
		if s.Wait == nil || l.Wait == nil || s.Run == nil {
			t.Fatalf("no rates: %s", r.stdout)
		}
		// Seven spinning threads share two cores, so the six wait about
		// six times as long as the one; twice leaves room for a busy
		// machine.
		if *s.Wait <= 2**l.Wait || *l.Wait <= 0 {
			t.Errorf("%s waits %.3f s/s, %s %.3f s/s", starved, *s.Wait, light, *l.Wait)
		}
		if s.Tasks < 6 {
			t.Errorf("%s has %v tasks, want at least its 6 spinning threads", starved, s.Tasks)
		}
	})

	t.Run("wrong URL", func(t *testing.T) {
		for path, says := range map[string]string{
			"/":     "serves an HTML page",
			"/nope": "404 Not Found",
		} {
			r := runTop(t, "--once", "--interval=100ms", "--from=http://"+d.addr+path)
			if r.code != 1 || !strings.Contains(r.stderr, says) || r.stdout != "" {
				t.Errorf("%s: exit %d, stderr %q, want 1 and %q", path, r.code, r.stderr, says)
			}
		}
	})
}

// TestTopMessages checks what top says when it cannot show a table.
func TestTopMessages(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"daemon unreachable", []string{"--once", "--from=http://" + freeAddr(t) + "/metrics"}, 1, "cannot reach the daemon at http://127.0.0.1:"},
		{"no cgroup filesystem", []string{"--once", "--path.cgroupfs=" + t.TempDir()}, 1, "no cgroups to read"},
		{"live view without a terminal", []string{"--from=http://" + freeAddr(t)}, 1, "the live view needs a terminal; use --once"},
		{"bad sort", []string{"--once", "--sort=size"}, 2, "--sort=size: not one of wait, run"},
		{"bad interval", []string{"--once", "--interval=0s"}, 2, "--interval=0s: out of range: from 100ms to 1h"},
		{"a daemon flag", []string{"--once", "--web.listen-address=:1"}, 2, "unknown long flag '--web.listen-address'"},
		{"bad URL", []string{"--once", "--from=ftp://host/metrics"}, 1, "the scheme must be http or https"},
		{"missing client config", []string{"--once", "--from=https://127.0.0.1:1/metrics", "--http.config.file=/nonexistent.yml"}, 1, "--http.config.file /nonexistent.yml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runTop(t, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.says) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tc.code, tc.says)
			}
		})
	}
}

// TestTopTLSAndBasicAuth reads a daemon that asks for TLS and basic auth,
// with a client config naming the CA and the user.
func TestTopTLSAndBasicAuth(t *testing.T) {
	e2e.RequireRoot(t)
	dir := t.TempDir()
	selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	web := write("web.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  prometheus: "+string(hash)+"\n")
	good := write("good.yml", "basic_auth:\n  username: prometheus\n  password: s3cret\ntls_config:\n  ca_file: cert.pem\n")
	wrong := write("wrong.yml", "basic_auth:\n  username: prometheus\n  password: wrong\ntls_config:\n  ca_file: cert.pem\n")
	d := startDaemon(t, "--web.config.file="+web)
	url := "--from=https://" + d.addr + "/metrics"

	r := runTop(t, "--once", "--interval=200ms", "--view=cgroups", url, "--http.config.file="+good)
	if r.code != 0 || !strings.Contains(r.stdout, "WAIT/s*") {
		t.Errorf("with the CA and password: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, tc := range []struct{ name, config, says string }{
		{"wrong password", wrong, "401 Unauthorized"},
		{"untrusted certificate", "", "tls_config.ca_file"},
	} {
		args := []string{"--once", "--interval=200ms", url}
		if tc.config != "" {
			args = append(args, "--http.config.file="+tc.config)
		}
		if r := runTop(t, args...); r.code != 1 || !strings.Contains(r.stderr, tc.says) {
			t.Errorf("%s: exit %d, stderr %q, want 1 and %q", tc.name, r.code, r.stderr, tc.says)
		}
	}
	if r := runTop(t, "--once", "--interval=200ms", "--from=http://"+d.addr+"/metrics"); r.code != 1 || !strings.Contains(r.stderr, "HTTPS server") {
		t.Errorf("plain HTTP to the TLS daemon: exit %d, stderr %q", r.code, r.stderr)
	}
}

// tmux drives a private tmux server, on a socket of its own, that the
// test kills when it ends.
type tmux struct {
	t    *testing.T
	sock string
}

func newTmux(t *testing.T) *tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		e2e.Unavailable(t, "tmux is not installed")
	}
	x := &tmux{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	t.Cleanup(func() {
		// Killing the server hangs up on every process in its panes.
		exec.Command("tmux", "-S", x.sock, "kill-server").Run()
	})
	return x
}

// run runs a tmux command and returns its output; it fails the test if
// tmux fails, unless mayFail.
func (x *tmux) run(mayFail bool, args ...string) (string, error) {
	x.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", x.sock}, args...)...).CombinedOutput()
	if err != nil && !mayFail {
		x.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out), err
}

// pane returns the visible lines of the pane.
func (x *tmux) pane() []string {
	x.t.Helper()
	out, _ := x.run(false, "capture-pane", "-p", "-t", "top")
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// await polls the pane until ok holds of it, for up to 15 seconds.
func (x *tmux) await(what string, ok func(lines []string, screen string) bool) []string {
	x.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		lines := x.pane()
		if ok(lines, strings.Join(lines, "\n")) {
			return lines
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("the pane never showed %s; it shows:\n%s", what, strings.Join(lines, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTopLiveInTmux runs the live view in a real terminal: tmux gives it
// a 100x30 pane, keys change the sort, the filter and the view, a resize
// to 80x24 redraws it to fit, and q ends it with status 0.
func TestTopLiveInTmux(t *testing.T) {
	e2e.RequireRoot(t)
	x := newTmux(t)
	starved, light := starvedPair(t)
	d := startDaemon(t, "--collect.interval=200ms")
	exitFile := filepath.Join(t.TempDir(), "exit")
	script := strconv.Quote(binary(t)) + " top --from=http://" + d.addr + "/metrics --interval=500ms --view=cgroups; echo $? > " + strconv.Quote(exitFile)
	x.run(false, "new-session", "-d", "-s", "top", "-x", "100", "-y", "30", "/bin/sh", "-c", script)

	x.await("rates sorted by wait", func(_ []string, s string) bool {
		return strings.Contains(s, "WAIT/s*") && strings.Contains(s, "sort: wait/s") && strings.Contains(s, "node  run ")
	})
	// Only the test's cgroups: the prefix of both names.
	prefix := strings.TrimSuffix(starved, starved[strings.LastIndexByte(starved, '-'):])
	x.run(false, "send-keys", "-t", "top", "/")
	x.await("the filter prompt", func(_ []string, s string) bool { return strings.Contains(s, "filter: _") })
	x.run(false, "send-keys", "-t", "top", "-l", prefix[1:])
	x.run(false, "send-keys", "-t", "top", "Enter")
	lines := x.await("the two test cgroups alone", func(l []string, s string) bool {
		return strings.Contains(s, "2 of ") && rowIndex(l, starved) >= 0 && rowIndex(l, light) >= 0
	})
	if rowIndex(lines, starved) > rowIndex(lines, light) {
		t.Errorf("by wait, %s is below %s:\n%s", starved, light, strings.Join(lines, "\n"))
	}

	x.run(false, "send-keys", "-t", "top", "r")
	x.await("the sort by run", func(_ []string, s string) bool {
		return strings.Contains(s, "RUN/s*") && !strings.Contains(s, "WAIT/s*") && strings.Contains(s, "sort: run/s")
	})
	// By name, then by name reversed: the two rows change places. The
	// names end in a count of the test cgroups made so far, so which
	// comes first is the names' own order ("-10" before "-9").
	first, second := starved, light
	if second < first {
		first, second = second, first
	}
	x.run(false, "send-keys", "-t", "top", "n")
	lines = x.await("the sort by name", func(l []string, s string) bool {
		return strings.Contains(s, "CGROUP*") && strings.Contains(s, "sort: name (A-Z)")
	})
	if rowIndex(lines, first) > rowIndex(lines, second) {
		t.Errorf("A to Z, %s is below %s:\n%s", first, second, strings.Join(lines, "\n"))
	}
	x.run(false, "send-keys", "-t", "top", "n")
	lines = x.await("the sort by name reversed", func(_ []string, s string) bool { return strings.Contains(s, "sort: name (reversed)") })
	if rowIndex(lines, first) < rowIndex(lines, second) {
		t.Errorf("Z to A, %s is above %s:\n%s", first, second, strings.Join(lines, "\n"))
	}

	x.run(false, "resize-window", "-t", "top", "-x", "80", "-y", "24")
	lines = x.await("a redraw at 80x24", func(l []string, _ string) bool {
		return len(l) == 24 && strings.HasPrefix(l[23], "w wait  r run")
	})
	for _, l := range lines {
		if len([]rune(l)) > 80 {
			t.Errorf("a line of %d columns at 80: %q", len([]rune(l)), l)
		}
	}
	t.Logf("80x24:\n%s", strings.Join(lines, "\n"))

	x.run(false, "send-keys", "-t", "top", "p")
	x.await("the containers view", func(_ []string, s string) bool { return strings.Contains(s, "view: containers") })

	x.run(false, "send-keys", "-t", "top", "q")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := x.run(true, "has-session", "-t", "top"); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("q did not end the session:\n%s", strings.Join(x.pane(), "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, err := os.ReadFile(exitFile)
	if err != nil || strings.TrimSpace(string(b)) != "0" {
		t.Errorf("top's exit status: %q, %v; want 0", b, err)
	}
}

// TestTopLiveUnreachableInTmux starts the live view in a terminal against
// a port nothing listens on: it must leave the terminal, say why on
// stderr and exit with status 1 rather than wait on an empty screen.
func TestTopLiveUnreachableInTmux(t *testing.T) {
	x := newTmux(t)
	dir := t.TempDir()
	exitFile, errFile := filepath.Join(dir, "exit"), filepath.Join(dir, "stderr")
	script := strconv.Quote(binary(t)) + " top --from=http://" + freeAddr(t) + "/metrics 2> " + strconv.Quote(errFile) + "; echo $? > " + strconv.Quote(exitFile)
	x.run(false, "new-session", "-d", "-s", "top", "-x", "80", "-y", "24", "/bin/sh", "-c", script)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if b, err := os.ReadFile(exitFile); err == nil && len(b) > 0 {
			if got := strings.TrimSpace(string(b)); got != "1" {
				t.Errorf("exit status %s, want 1", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("top did not exit:\n%s", strings.Join(x.pane(), "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := os.ReadFile(errFile)
	if !strings.Contains(string(b), "cannot reach the daemon") {
		t.Errorf("stderr %q does not say the daemon cannot be reached", b)
	}
}
