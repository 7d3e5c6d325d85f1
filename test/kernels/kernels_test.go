package kernels

import (
	"os"
	"os/exec"
	"path/filepath"
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
	{pkg: "cgroupfs"},
	{pkg: "container"},
	{pkg: "taskiter"},
	{pkg: "exitcapture"},
	{pkg: "cmd/schedstatd", run: "^(TestDaemonMatchesKernel|TestDaemonEndpoints|TestSystemdHierarchy)$"},
}

// vmTimeout bounds one VM's run.
const vmTimeout = 20 * time.Minute

// TestKernels boots every kernel of the matrix and reports each test of
// each binary as kernel/package/test. It runs only when
// SCHEDSTATD_KERNELS=1 (make test-kernels); SCHEDSTATD_KERNELS_ONLY=5.10,6.1
// picks kernels.
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
	initrd := buildImage(t, repo, imgDir, binaries)
	t.Logf("initramfs built in %.1fs", time.Since(start).Seconds())

	for _, k := range ks {
		t.Run(k.name, func(t *testing.T) {
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
			for _, b := range binaries {
				t.Run(strings.TrimSuffix(b.name(), ".test"), func(t *testing.T) {
					s := sections[b.pkg]
					if s == nil {
						t.Fatalf("%s did not run; console:\n%s", b.pkg, tail(console, 4000))
					}
					report(t, b.pkg, s)
				})
			}
		})
	}
}

// report turns one binary's run into subtests, one per top-level test.
func report(t *testing.T, pkg string, s *section) {
	rs := parse(t, pkg, s.out)
	failed := false
	for _, r := range rs {
		t.Run(r.name, func(t *testing.T) {
			switch r.action {
			case "pass":
				if testing.Verbose() {
					t.Log(strings.TrimRight(r.output, "\n"))
				}
			case "skip":
				t.Skip(skipReason(r.output))
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
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
