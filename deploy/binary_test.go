package deploy

import (
	"context"
	"debug/elf"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/schedstatd/schedstatd/internal/imagebuild"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/fakecri"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the daemon once per test run, as the image holds it.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "schedstatd-deploy-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "schedstatd")
		// As make image and the Dockerfile build it: static, without cgo.
		buildErr = imagebuild.BuildBinary(context.Background(), "..", runtime.GOARCH, "-X github.com/prometheus/common/version.Version="+testVersion, binPath)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// TestDaemonSetArgsParse runs the binary's own flag parser on the
// DaemonSet's arguments: with --help it parses them and stops, and it
// fails on a flag it does not have, as the control shows.
func TestDaemonSetArgsParse(t *testing.T) {
	bin := binary(t)
	args := load(t).container(t).Args
	if out, err := exec.Command(bin, append(args, "--help")...).CombinedOutput(); err != nil {
		t.Errorf("schedstatd %s --help: %v\n%s", strings.Join(args, " "), err, out)
	}
	if out, err := exec.Command(bin, "--no-such-flag=1", "--help").CombinedOutput(); err == nil {
		t.Errorf("the control with an unknown flag passed:\n%s", out)
	}
}

// TestStaticBuild checks that the daemon built as the Dockerfile builds it
// (there is no container engine to run the Dockerfile itself in the test)
// needs no dynamic loader or shared library, so it runs
// on the image's empty base.
func TestStaticBuild(t *testing.T) {
	out := binary(t)
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %v program header: it is dynamically linked", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs %v", libs)
	}
}

// TestDaemonSetArgsServe runs the daemon with the DaemonSet's arguments as
// the kubelet would give them: each path under a volume mount becomes the
// volume's host path (the runtime's directory a temporary one, where a CRI
// server listens), and the listen address a free loopback port, with
// --collect.latency and --collect.preemption beside them. The daemon must
// start, count the runtime up, and export every metric the dashboard
// queries.
func TestDaemonSetArgsServe(t *testing.T) {
	e2e.RequireRoot(t)
	bin := binary(t)
	m := load(t)
	c := m.container(t)

	runtimeDir, err := os.MkdirTemp("", "cri")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(runtimeDir)
	// The host's side of each hostPath volume, on this machine.
	hostRoot := map[string]string{"/proc": "/proc", "/sys/fs/cgroup": "/sys/fs/cgroup"}
	// The state file's directory: a fresh one, not this machine's /run.
	for _, v := range m.ds.Spec.Template.Spec.Volumes {
		if v.Name == stateVolume {
			hostRoot[v.HostPath.Path] = t.TempDir()
		}
	}
	var serving bool
	flags := daemonSetFlags(t, c)
	args := []string{}
	addr := freeAddr(t)
	for _, a := range c.Args {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		scheme, path := "", value
		if p, ok := strings.CutPrefix(value, "unix://"); ok {
			scheme, path = "unix://", p
		}
		if vm, hostPath, ok := mountFor(m, c, path); ok && strings.HasPrefix(path, "/") {
			root, known := hostRoot[hostPath]
			if !known {
				// The runtime's socket directory: serve a CRI there.
				root = runtimeDir
				if !serving {
					// A runtime with no pods, enough to count it up.
					fakecri.Serve(t, fakecri.New(), filepath.Join(runtimeDir, strings.TrimPrefix(path, vm.MountPath)))
					serving = true
				}
			}
			value = scheme + root + strings.TrimPrefix(path, vm.MountPath)
		}
		if name == "web.listen-address" {
			value = addr
		}
		args = append(args, "--"+name+"="+value)
	}
	if !serving || flags["path.procfs"] == "" {
		t.Fatalf("args %v: no runtime socket or procfs path to map", c.Args)
	}
	// The opt-in sched_switch program, whose series the dashboard's last
	// row and an alert query.
	args = append(args, "--collect.latency", "--collect.preemption")
	t.Logf("schedstatd %s", strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("schedstatd exited: %v\n%s", err, &stderr)
			}
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Errorf("schedstatd did not stop on SIGTERM\n%s", &stderr)
		}
	}()

	var up float64
	var names map[string]bool
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("schedstatd exited at start: %v\n%s", err, &stderr)
		default:
		}
		names, up = scrape(addr)
		if up == 1 || time.Now().After(deadline) {
			break
		}
	}
	if up != 1 {
		t.Fatalf("schedstatd_runtime_up is %v with a CRI server on the mapped socket\n%s", up, &stderr)
	}
	if !names["schedstatd_state_writes_total"] {
		t.Errorf("no schedstatd_state_writes_total: the state file is not kept")
	}
	checkQueries(t, loadDashboard(t).queries(t), names, "the daemon's /metrics")
	names["up"] = true // Prometheus's own, for each target
	checkQueries(t, alertQueries(t), names, "the daemon's /metrics")
}

// scrape returns the series names of the daemon's /metrics, and
// schedstatd_runtime_up (-1 if absent or the scrape failed).
func scrape(addr string) (map[string]bool, float64) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, -1
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, -1
	}
	names := map[string]bool{}
	up := -1.0
	for name, mf := range mfs {
		addFamily(names, name, mf.GetType())
		if name == "schedstatd_runtime_up" && len(mf.GetMetric()) == 1 {
			up = mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return names, up
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
