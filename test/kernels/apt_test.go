package kernels

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// kernel is one kernel the suite runs on: a Debian suite whose
// linux-image-amd64 package names the kernel.
type kernel struct {
	name  string // as subtests name it: "5.10"
	suite string // Debian suite: "bullseye"
}

// kernels are the kernels of the matrix, oldest first.
var kernels = []kernel{
	{"5.10", "bullseye"},
	{"6.1", "bookworm"},
	{"6.12", "bookworm-backports"},
}

// mirror is the Debian archive the kernels come from.
const mirror = "http://deb.debian.org/debian"

// cacheDir is where kernels and images are kept between runs:
// $SCHEDSTATD_VM_CACHE, else /var/cache/schedstatd-vm for root, else
// $XDG_CACHE_HOME/schedstatd-vm (~/.cache/schedstatd-vm).
func cacheDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("SCHEDSTATD_VM_CACHE")
	switch {
	case dir != "":
	case os.Geteuid() == 0:
		dir = "/var/cache/schedstatd-vm"
	default:
		c, err := os.UserCacheDir()
		if err != nil {
			t.Fatalf("no cache directory: %v (set SCHEDSTATD_VM_CACHE)", err)
		}
		dir = filepath.Join(c, "schedstatd-vm")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// vmlinuz returns the path of k's kernel image, fetched into cache with
// apt and kept there: a cached image is used as it is, without asking the
// archive again (remove the suite's directory to fetch anew).
func vmlinuz(t testing.TB, cache string, k kernel) string {
	t.Helper()
	dir := filepath.Join(cache, k.suite)
	found, _ := filepath.Glob(filepath.Join(dir, "boot", "vmlinuz-*"))
	if len(found) == 1 {
		return found[0]
	}
	a := privateApt(t, dir, k.suite)
	a.run(t, "apt-get", "update")
	dep := a.run(t, "apt-cache", "depends", "linux-image-amd64")
	m := regexp.MustCompile(`Depends: (linux-image-[0-9][^\s]*-amd64)\b`).FindStringSubmatch(dep)
	if m == nil {
		t.Fatalf("%s: linux-image-amd64 names no kernel package:\n%s", k.suite, dep)
	}
	debs := filepath.Join(dir, "debs")
	if err := os.MkdirAll(debs, 0o755); err != nil {
		t.Fatal(err)
	}
	a.dir = debs
	a.run(t, "apt-get", "download", m[1])
	found, _ = filepath.Glob(filepath.Join(debs, m[1]+"_*.deb"))
	if len(found) != 1 {
		t.Fatalf("%s: apt-get download %s left %v", k.suite, m[1], found)
	}
	// Only the image is needed: the VM loads no module. (The package's
	// System.map is a stub pointing at the -dbg package; a frozen guest's
	// symbols come from the kernel's own /proc/kallsyms, see symbols.)
	extract := fmt.Sprintf("dpkg-deb --fsys-tarfile %q | tar -x -C %q --wildcards './boot/vmlinuz-*'", found[0], dir)
	if out, err := exec.Command("sh", "-c", extract).CombinedOutput(); err != nil {
		t.Fatalf("extract the kernel from %s: %v\n%s", found[0], err, out)
	}
	os.Remove(found[0])
	found, _ = filepath.Glob(filepath.Join(dir, "boot", "vmlinuz-*"))
	if len(found) != 1 {
		t.Fatalf("%s: %s held %d kernel images", k.suite, m[1], len(found))
	}
	return found[0]
}

// apt runs apt-get and apt-cache over a configuration of their own: its
// own sources list (one suite), state, lists and cache, all under one
// directory, so the machine's /etc/apt and its package state are neither
// read for sources nor changed.
type apt struct {
	opts []string
	dir  string // where commands run (apt-get download writes there)
}

func privateApt(t testing.TB, dir, suite string) *apt {
	t.Helper()
	for _, d := range []string{"etc/preferences.d", "state/lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(dir, "apt", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	base := filepath.Join(dir, "apt")
	list := filepath.Join(base, "etc", "sources.list")
	src := fmt.Sprintf("deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n", mirror, suite)
	if err := os.WriteFile(list, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return &apt{dir: dir, opts: []string{
		"-o", "Dir::Etc::SourceList=" + list,
		"-o", "Dir::Etc::SourceParts=/dev/null",
		"-o", "Dir::Etc::Preferences=/dev/null",
		"-o", "Dir::Etc::PreferencesParts=" + filepath.Join(base, "etc", "preferences.d"),
		"-o", "Dir::State=" + filepath.Join(base, "state"),
		"-o", "Dir::State::Status=/dev/null",
		"-o", "Dir::Cache=" + filepath.Join(base, "cache"),
		"-o", "Debug::NoLocking=1",
		"-o", "Acquire::Languages=none",
		"-o", "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false",
		"-o", "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false",
		"-o", "Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled=false",
		"-q",
	}}
}

// run runs the apt command with args and returns its output.
func (a *apt) run(t testing.TB, command string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath(command); err != nil {
		t.Fatalf("%s is not installed: the kernels come from Debian's archive through apt", command)
	}
	cmd := exec.Command(command, append(append([]string(nil), a.opts...), args...)...)
	cmd.Dir = a.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", command, strings.Join(args, " "), err, out)
	}
	return string(out)
}
