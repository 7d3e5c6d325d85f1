package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

func TestMain(m *testing.M) {
	testproc.Main()
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	binDir   string
	binMu    sync.Mutex
	binPaths = map[bool]string{}
)

// binary builds the daemon with the race detector once per test run, so
// the end-to-end tests race-check the daemon too.
func binary(t *testing.T) string { return build(t, true) }

// plainBinary builds the daemon as it ships (make build), for measuring
// its memory and its version.
func plainBinary(t *testing.T) string { return build(t, false) }

// envBinary names a daemon binary built beforehand, used instead of a
// build: the kernel matrix's VMs (test/kernels) have no Go toolchain.
const envBinary = "SCHEDSTATD_BINARY"

func build(t *testing.T, race bool) string {
	t.Helper()
	if p := os.Getenv(envBinary); p != "" {
		return p
	}
	binMu.Lock()
	defer binMu.Unlock()
	if p, ok := binPaths[race]; ok {
		return p
	}
	if binDir == "" {
		dir, err := os.MkdirTemp("", "schedstatd-bin-")
		if err != nil {
			t.Fatal(err)
		}
		// Readable by all, for tests that run the daemon as another user.
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		binDir = dir
	}
	out := filepath.Join(binDir, fmt.Sprintf("schedstatd-race-%v", race))
	// go test puts its own Go first in PATH.
	cmd := exec.Command("go", "build", "-race", "-o", out, ".")
	if !race {
		// As it ships: by make build, with the version fields set,
		// without cgo as the Dockerfile builds it (the package deploy
		// builds the same way, so the two builds share the cache).
		gobin, err := exec.LookPath("go")
		if err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command("make", "-s", "-C", "../..", "build", "GO="+gobin, "BIN="+out)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, b)
	}
	binPaths[race] = out
	return out
}

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// daemon is a running schedstatd.
type daemon struct {
	cmd    *exec.Cmd
	addr   string
	stderr *bytes.Buffer
	done   chan error
}

// startDaemon runs the binary on a free loopback port with args, and waits
// until it answers. It is stopped with SIGTERM when the test ends.
func startDaemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	return startWrapped(t, nil, args...)
}

// startWrapped is startDaemon with the daemon run by the command wrapper
// (such as prlimit or setpriv), if any.
func startWrapped(t *testing.T, wrapper []string, args ...string) *daemon {
	t.Helper()
	return startBinary(t, binary(t), wrapper, args...)
}

// asNobody is a wrapper for startWrapped that runs the daemon as user
// nobody, with no capabilities.
func asNobody(t *testing.T) []string {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		e2e.Unavailable(t, "no setpriv(1)")
	}
	return []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"}
}

// startBinary runs the daemon binary bin, through wrapper if any.
func startBinary(t *testing.T, bin string, wrapper []string, args ...string) *daemon {
	t.Helper()
	d := &daemon{addr: freeAddr(t), stderr: new(bytes.Buffer), done: make(chan error, 1)}
	argv := append(append(append([]string(nil), wrapper...), bin, "--web.listen-address="+d.addr), args...)
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--state.path") }) {
		// Daemons of tests run side by side: none keeps the node's
		// state file unless its test is about it.
		argv = append(argv, "--state.path=")
	}
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--bpf.pin-path") }) {
		// Nor pins the kernel totals in the node's bpffs.
		argv = append(argv, "--bpf.pin-path=")
	}
	d.cmd = exec.Command(argv[0], argv[1:]...)
	d.cmd.Stderr = &lockedWriter{w: d.stderr}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		d.stop(t)
		if t.Failed() {
			t.Logf("daemon log:\n%s", d.log())
		}
	})
	// A bound on a stuck start only: loading kernel BTF and two BPF
	// programs takes well under a second natively, up to half a minute
	// under software emulation on a busy host (the kernel matrix's VMs).
	deadline := time.Now().Add(90 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", d.addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return d
		}
		select {
		case err := <-d.done:
			d.done <- err
			t.Fatalf("daemon exited: %v\n%s", err, d.log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not listen on %s:\n%s", d.addr, d.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (d *daemon) stop(t *testing.T) {
	if d.cmd.ProcessState != nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		d.done <- err
		if err != nil {
			t.Errorf("daemon exited with %v after SIGTERM", err)
		}
	case <-time.After(15 * time.Second):
		d.cmd.Process.Kill()
		t.Errorf("daemon did not stop within 15s of SIGTERM")
	}
}

var logMu sync.Mutex

type lockedWriter struct{ w io.Writer }

func (l *lockedWriter) Write(b []byte) (int, error) {
	logMu.Lock()
	defer logMu.Unlock()
	return l.w.Write(b)
}

func (d *daemon) log() string {
	logMu.Lock()
	defer logMu.Unlock()
	return d.stderr.String()
}

// scrape fetches url with client and parses the text exposition.
func scrape(t *testing.T, client *http.Client, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	return scrapeBody(t, resp)
}

// scrapeBody parses a response in the text exposition format.
func scrapeBody(t *testing.T, resp *http.Response) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", resp.Request.URL, err)
	}
	return mfs
}

// value returns the value of the series of family name whose id label is
// id, and whether there is one.
func value(mfs map[string]*dto.MetricFamily, name, id string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "id" && lp.GetValue() == id {
				switch {
				case m.Counter != nil:
					return m.Counter.GetValue(), true
				case m.Gauge != nil:
					return m.Gauge.GetValue(), true
				}
			}
		}
	}
	return 0, false
}
