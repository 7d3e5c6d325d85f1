package kernels

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// binaries are the real-kernel tests run in every VM: the packages whose
// tests drive the kernel's cgroups, tasks and BPF, and the daemon's
// end-to-end tests that need no tool busybox lacks.
var binaries = []binary{
	{pkg: "schedstat"},
	{pkg: "procsource"},
	{pkg: "cgroupfs"},
	// The import checks need the go tool, which the VMs do not have; they
	// are not about the kernel.
	{pkg: "container", skip: "^TestAccountingKnowsNoSource$"},
	{pkg: "taskiter"},
	{pkg: "exitcapture"},
	{pkg: "schedlat"},
	{pkg: "aggregate"},
	{pkg: "cmd/schedstatd", run: "^(TestDaemonMatchesKernel|TestDaemonEndpoints|TestSystemdHierarchy|TestThrottledWaitSplit|TestAutoSourcePins)$"},
}

// feature is a kernel-side feature and the tests that prove it on a
// kernel: each must run and pass there (a skip is a failure), since every
// kernel of the matrix is meant to support every feature. A kernel that
// is not would list the tests that check its fallback instead.
type feature struct {
	name  string
	tests map[string][]string // package -> tests
	// fallback names the kernels that lack the feature, and for each the
	// tests that check the fallback there (they must pass) and those that
	// need the feature (they must skip, saying why).
	fallback map[string]fallback
}

// fallback is what a kernel without a feature must show instead.
type fallback struct {
	pass, skip map[string][]string // package -> tests
}

var features = []feature{
	{"task iterator", map[string][]string{
		"taskiter":  {"TestScenarioReal", "TestDifferentialReal", "TestTableTotalsReal"},
		"container": {"TestRealPIDReuse", "TestRealThreadsMatchKernel"},
	}, nil},
	{"exit capture", map[string][]string{
		"exitcapture": {"TestRecordsMatchProc", "TestCoverageShortTasks", "TestNoDoubleCount", "TestCoverageHooks"},
	}, nil},
	{"move records", map[string][]string{
		"exitcapture": {"TestMigrationSplitsAtTheMove"},
	}, nil},
	{"kernel totals", map[string][]string{
		"aggregate":      {"TestScenarioReal", "TestCoverageShortTasks", "TestPIDReuse", "TestPrime", "TestRestart", "TestRestartLosesNothing", "TestPinsOfAnotherShape", "TestPreparePins", "TestSelect", "TestKernelSupports"},
		"cmd/schedstatd": {"TestAutoSourcePins"},
	}, map[string]fallback{
		// 5.10 has no BPF task storage (5.11+): --collect.source=aggregate
		// refuses to start there, and auto takes the task iterator.
		"5.10": {
			pass: map[string][]string{"aggregate": {"TestSelect", "TestKernelSupports", "TestPreparePins"}, "cmd/schedstatd": {"TestAutoSourcePins"}},
			skip: map[string][]string{"aggregate": {"TestScenarioReal", "TestCoverageShortTasks", "TestPIDReuse", "TestPrime", "TestRestart", "TestRestartLosesNothing", "TestPinsOfAnotherShape"}},
		},
	}},
	{"daemon over pure v2", map[string][]string{
		"cmd/schedstatd": {"TestDaemonMatchesKernel", "TestSystemdHierarchy"},
	}, nil},
	{"runqueue latency and preemption", map[string][]string{
		"schedlat": {"TestLatencyReal", "TestPreemptionSameReal", "TestFallbackReal"},
	}, map[string]fallback{
		// 5.10 has no BPF task storage (5.11+): the daemon goes on
		// without the program, with one log line and a self metric.
		"5.10": {
			pass: map[string][]string{"schedlat": {"TestFallbackReal"}},
			skip: map[string][]string{"schedlat": {"TestLatencyReal", "TestPreemptionSameReal"}},
		},
	}},
	{"v2 quota and pressure", map[string][]string{
		"cgroupfs":       {"TestKernelFilesMatchKernel"},
		"cmd/schedstatd": {"TestThrottledWaitSplit"},
	}, nil},
}

// coverageLine is what TestCoverageShortTasks logs.
var coverageLine = regexp.MustCompile(`with exit capture [0-9.]+s \(coverage ([0-9.]+)\); polling only [0-9.]+s \(coverage ([0-9.]+)\)`)

// checkFeatures fails t for every feature test that did not pass on the
// kernel, and logs the kernel's row of the feature table. A feature whose
// packages were left out (SCHEDSTATD_KERNELS_PKGS) is not checked.
func checkFeatures(t *testing.T, kernel string, results map[string]map[string]result) {
	var row []string
	for _, f := range features {
		if slices.ContainsFunc(slices.Collect(maps.Keys(f.tests)), func(pkg string) bool { return results[pkg] == nil }) {
			row = append(row, f.name+": not run")
			continue
		}
		if fb, ok := f.fallback[kernel]; ok {
			state := "falls back as expected"
			for want, byPkg := range map[string]map[string][]string{"pass": fb.pass, "skip": fb.skip} {
				for pkg, tests := range byPkg {
					for _, name := range tests {
						if r := results[pkg][name]; r.action != want {
							state = "FAILS"
							t.Errorf("%s: %s %s: %s, want %s: this kernel is meant to fall back; it said last: %s", f.name, pkg, name, cmp.Or(r.action, "not run"), want, lastLog(r.output))
						}
					}
				}
			}
			row = append(row, f.name+": "+state)
			continue
		}
		ok := true
		for pkg, tests := range f.tests {
			for _, name := range tests {
				r, ran := results[pkg][name]
				if !ran || r.action != "pass" {
					ok = false
					t.Errorf("%s: %s %s did not pass (%s): this kernel is meant to support it; it said last: %s", f.name, pkg, name, cmp.Or(r.action, "not run"), lastLog(r.output))
				}
			}
		}
		state := "loads, exact"
		switch f.name {
		case "daemon over pure v2":
			state = "matches cpu.stat"
		case "v2 quota and pressure":
			state = "matches cpu.stat and cpu.pressure"
		}
		if !ok {
			state = "FAILS"
		}
		if m := coverageLine.FindStringSubmatch(results["exitcapture"]["TestCoverageShortTasks"].output); m != nil && f.name == "exit capture" {
			state += fmt.Sprintf(" (coverage %s; polling only %s)", m[1], m[2])
		}
		row = append(row, f.name+": "+state)
	}
	t.Logf("features: %s", strings.Join(row, "; "))
}

// vmTimeout bounds one VM's run.
// A binary's own go test timeout (10 minutes, see initScript) fires first
// and prints every goroutine's stack.
const vmTimeout = 30 * time.Minute

// TestKernels boots every kernel of the matrix and reports each test of
// each binary as kernel/package/test. It runs only when
// SCHEDSTATD_KERNELS=1 (make test-kernels); SCHEDSTATD_KERNELS_ONLY=5.10,6.1
// picks kernels, SCHEDSTATD_KERNELS_PKGS=taskiter,cmd/schedstatd test
// binaries.
func TestKernels(t *testing.T) {
	if os.Getenv("SCHEDSTATD_KERNELS") != "1" {
		t.Skip("boots virtual machines: run make test-kernels (SCHEDSTATD_KERNELS=1)")
	}
	for tool, pkg := range map[string]string{"qemu-system-x86_64": "qemu-system-x86", "dpkg-deb": "dpkg", "apt-get": "apt"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (Debian package %s; make test-kernels installs it as root)", tool, pkg)
		}
	}
	cache := cacheDir(t)
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ks := kernels
	if only := os.Getenv("SCHEDSTATD_KERNELS_ONLY"); only != "" {
		want := strings.Split(only, ",")
		ks = slices.DeleteFunc(slices.Clone(ks), func(k kernel) bool { return !slices.Contains(want, k.name) })
	}
	start := time.Now()
	images := map[string]string{}
	for _, k := range ks {
		images[k.name] = vmlinuz(t, cache, k)
	}
	t.Logf("kernels ready in %.1fs (cache %s)", time.Since(start).Seconds(), cache)
	start = time.Now()
	imgDir := filepath.Join(cache, "image")
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bins := binaries
	if only := os.Getenv("SCHEDSTATD_KERNELS_PKGS"); only != "" {
		want := strings.Split(only, ",")
		bins = slices.DeleteFunc(slices.Clone(bins), func(b binary) bool { return !slices.Contains(want, b.pkg) })
	}
	initrd := buildImage(t, repo, imgDir, bins)
	t.Logf("initramfs built in %.1fs", time.Since(start).Seconds())

	for _, k := range ks {
		t.Run(k.name, func(t *testing.T) {
			// Each VM's CPUs share one host thread (see qemuArgs): as many
			// VMs run at once as go test's -parallel allows (make
			// test-kernels: all of them).
			t.Parallel()
			runDir := filepath.Join(cache, "run", k.name)
			os.RemoveAll(runDir)
			if err := os.MkdirAll(runDir, 0o755); err != nil {
				t.Fatal(err)
			}
			results, console := boot(t, runDir, images[k.name], initrd, vmTimeout)
			header, sections := split(results)
			for _, h := range header {
				t.Log(h)
			}
			if len(sections) == 0 {
				t.Fatalf("no results from the VM; console:\n%s", tail(console, 4000))
			}
			byPkg := map[string]map[string]result{}
			for _, b := range bins {
				t.Run(strings.TrimSuffix(b.name(), ".test"), func(t *testing.T) {
					s := sections[b.pkg]
					if s == nil {
						t.Fatalf("%s did not run; console:\n%s", b.pkg, tail(console, 4000))
					}
					byPkg[b.pkg] = map[string]result{}
					for _, r := range report(t, b.pkg, s) {
						byPkg[b.pkg][r.name] = r
					}
				})
			}
			checkFeatures(t, k.name, byPkg)
		})
	}
}

// report turns one binary's run into subtests, one per top-level test,
// and returns the results.
func report(t *testing.T, pkg string, s *section) []result {
	rs := parse(t, pkg, s.out)
	failed := false
	for _, r := range rs {
		t.Run(r.name, func(t *testing.T) {
			for _, s := range r.skipped {
				t.Logf("skipped in the VM: %s", s)
			}
			switch r.action {
			case "pass":
			case "skip":
				t.Skip(lastLog(r.output))
			default:
				failed = true
				t.Errorf("failed in the VM:\n%s", r.output)
			}
		})
	}
	if s.code != 0 && !failed {
		t.Errorf("test binary exited %d:\n%s", s.code, tail(string(s.out), 6000))
	}
	if len(rs) == 0 {
		t.Errorf("ran no test:\n%s", tail(string(s.out), 2000))
	}
	return rs
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
