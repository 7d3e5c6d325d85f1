package kernels

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/imagebuild"
)

// binary is one test binary the VMs run: the tests of package pkg (a
// directory of the repository), those matching run ("" for all).
type binary struct {
	pkg string
	// run and skip, if set, are the binary's -test.run and -test.skip.
	run, skip string
}

// name is the binary's file name in the image.
func (b binary) name() string { return strings.ReplaceAll(b.pkg, "/", "_") + ".test" }

// Markers frame each binary's output on the results port.
const (
	markBegin = "@@schedstatd-begin "
	markEnd   = "@@schedstatd-end "
)

// initScript is the VM's /init: busybox's shell mounts what the tests
// need (cgroup2 alone at /sys/fs/cgroup: the kernel boots with every v1
// controller disabled), runs each test binary from its package's
// directory with its output on the second serial port, and powers off.
const initScript = `#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/tmp TMPDIR=/tmp SCHEDSTATD_E2E=1 SCHEDSTATD_BINARY=/bin/schedstatd
mount -t devtmpfs dev /dev
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t bpf bpf /sys/fs/bpf
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmp /tmp
ip link set lo up
# Boot quietly, then let hung-task and lockup reports through with their
# stacks. The binaries run with -test.short: the tests that start thousands
# of tasks start fewer (software emulation runs them 20-50 times slower).
echo 7 > /proc/sys/kernel/printk
for c in $(cat /sys/fs/cgroup/cgroup.controllers); do echo +$c > /sys/fs/cgroup/cgroup.subtree_control; done
out=/dev/ttyS1
stty -F $out raw -echo 115200 2>/dev/null
{
echo "@@schedstatd-kernel $(uname -r)"
echo "@@schedstatd-cgroup /sys/fs/cgroup magic 0x$(stat -f -c %t /sys/fs/cgroup) (cgroup2 is 0x63677270), v1 mounts: $(grep -c " cgroup " /proc/mounts), controllers: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
} > $out
while read -r bin pkg run skip; do
	[ "$run" = - ] && run=
	[ "$skip" = - ] && skip=
	echo "` + markBegin + `$pkg" > $out
	cd /src/$pkg
	/src/$bin -test.v -test.short -test.count=1 -test.timeout=10m ${run:+-test.run "$run"} ${skip:+-test.skip "$skip"} > $out 2>&1
	echo "` + markEnd + `$pkg $?" > $out
done < /binaries
cd /
sync
poweroff -f
`

// buildImage builds the test binaries and the daemon into dir and packs
// them with busybox and the fixtures into an initramfs there.
func buildImage(t *testing.T, repo, dir string, bins []binary) string {
	t.Helper()
	busybox := "/bin/busybox"
	if err := imagebuild.CheckStatic(busybox); err != nil {
		t.Fatalf("%v: the VMs need Debian's busybox-static (make test-kernels installs it)", err)
	}
	build := func(args ...string) {
		cmd := exec.Command("go", args...)
		cmd.Dir = repo
		// Static, and without -race: the VMs run under software emulation.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	var list strings.Builder
	for _, b := range bins {
		build("test", "-c", "-o", filepath.Join(dir, b.name()), "./"+b.pkg)
		fmt.Fprintf(&list, "%s %s %s %s\n", b.name(), b.pkg, cmp.Or(b.run, "-"), cmp.Or(b.skip, "-"))
	}
	build("build", "-o", filepath.Join(dir, "schedstatd"), "./cmd/schedstatd")

	img := filepath.Join(dir, "initramfs.cpio")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := newCPIO(f)
	for _, d := range []string{"bin", "dev", "proc", "sys", "tmp", "src", "src/test"} {
		c.dir(d)
	}
	c.char("dev/console", 5, 1)
	c.bytes("init", []byte(initScript), 0o755)
	c.bytes("binaries", []byte(list.String()), 0o644)
	c.file("bin/busybox", busybox)
	c.file("bin/schedstatd", filepath.Join(dir, "schedstatd"))
	c.tree("src/test/fixtures", filepath.Join(repo, "test", "fixtures"))
	made := map[string]bool{"src/test": true}
	for _, b := range bins {
		c.file("src/"+b.name(), filepath.Join(dir, b.name()))
		// Each package's directory, with its testdata, as its tests' cwd.
		parts := strings.Split(b.pkg, "/")
		for i := range parts {
			if d := "src/" + strings.Join(parts[:i+1], "/"); !made[d] {
				c.dir(d)
				made[d] = true
			}
		}
		if td := filepath.Join(repo, b.pkg, "testdata"); isDir(td) {
			c.tree("src/"+b.pkg+"/testdata", td)
		}
	}
	if err := c.close(); err != nil {
		t.Fatalf("write %s: %v", img, err)
	}
	return img
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// qemuArgs are the arguments that boot kernel with initrd under software
// emulation (/dev/kvm here is a nested device stock kernels cannot run
// on) into pure cgroup v2, with serial ports ttyS0, ttyS1, ... backed by
// serials, in order ("stdio", "null", "file:<path>").
//
// The two virtual CPUs take turns on one host thread (thread=single):
// with a thread each (qemu's default), guests froze while the kernel
// patched the sched_switch tracepoint's call in __schedule as a BPF
// program attached (text_poke_bp): one CPU waited in
// smp_call_function_single for the other, which kept taking the int3
// the patching had planted and never left __schedule (logged so on 5.10;
// a 6.1 guest froze at the same step before stacks were logged).
func qemuArgs(kernel, initrd string, serials ...string) []string {
	args := []string{
		"-accel", "tcg,thread=single", "-cpu", "max", "-smp", "2", "-m", "2G", "-nographic",
		"-no-reboot", "-nodefaults", "-no-user-config",
		"-kernel", kernel, "-initrd", initrd,
		"-append", "console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init nokaslr " +
			"softlockup_all_cpu_backtrace=1 " +
			"cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1",
	}
	for _, s := range serials {
		args = append(args, "-serial", s)
	}
	return args
}

// stallAfter is how long a guest may write nothing to the results port
// before it is taken for frozen. It is longer than the in-guest test
// timeout (10 minutes, see initScript), so a live guest always reports a
// stuck test itself, with every goroutine's stack, first.
const stallAfter = 11 * time.Minute

// boot runs kernel with initrd in qemu under software emulation until the
// VM powers off, and returns what the tests wrote to the results port.
// The console goes to console.log in dir. A guest that writes nothing for
// stallAfter, or runs past timeout, is stopped after its CPUs' registers
// and stacks are logged, named with the kernel's symbols.
func boot(t *testing.T, dir, kernel, initrd string, timeout time.Duration) (results []byte, console string) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	resultsPath := filepath.Join(dir, "results.log")
	monitorPath := filepath.Join(dir, "monitor.sock")
	consolePath := filepath.Join(dir, "console.log")
	cf, err := os.Create(consolePath)
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", append(qemuArgs(kernel, initrd, "stdio", "file:"+resultsPath),
		"-monitor", "unix:"+monitorPath+",server,nowait")...)
	cmd.Stdout, cmd.Stderr = cf, cf
	cmd.WaitDelay = 5 * time.Second
	// A stopped guest's CPUs go to the log before qemu is killed: where
	// it spins, and what called it.
	cmd.Cancel = func() error {
		state := cpuState(monitorPath)
		err := cmd.Process.Kill()
		syms, serr := kernelSymbols(kernel)
		if serr != nil {
			t.Logf("no symbols: %v", serr)
		}
		t.Logf("%v; the VM's CPUs:\n%s", context.Cause(ctx), syms.annotate(state))
		return err
	}
	go watchProgress(ctx, cancel, resultsPath, timeout)
	start := time.Now()
	err = cmd.Run()
	b, _ := os.ReadFile(consolePath)
	console = string(b)
	if cause := context.Cause(ctx); cause != nil {
		t.Errorf("%v", cause)
	} else if err != nil {
		t.Errorf("qemu: %v", err)
	}
	t.Logf("VM ran %.1fs", time.Since(start).Seconds())
	results, _ = os.ReadFile(resultsPath)
	return results, console
}

// watchProgress cancels ctx when the file at path has not grown for
// stallAfter, or when timeout has passed.
func watchProgress(ctx context.Context, cancel context.CancelCauseFunc, path string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	var size int64 = -1
	grew := time.Now()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if st, err := os.Stat(path); err == nil && st.Size() != size {
				size, grew = st.Size(), now
			}
			switch {
			case now.After(deadline):
				cancel(fmt.Errorf("the VM did not power off within %v", timeout))
				return
			case now.Sub(grew) > stallAfter:
				cancel(fmt.Errorf("the VM wrote no result for %v: the guest is frozen", stallAfter))
				return
			}
		}
	}
}

// cpuState asks qemu's monitor at path for each virtual CPU's registers
// and the top of its stack ($esp is the monitor's name for rsp too), three
// times a second apart.
func cpuState(path string) string {
	var cmds []string
	for round := range 3 {
		if round > 0 {
			cmds = append(cmds, "")
		}
		for cpu := range 2 {
			cmds = append(cmds, fmt.Sprintf("cpu %d", cpu), "info registers", "x/24gx $esp")
		}
	}
	return monitor(path, cmds...)
}

// ansi matches the terminal escapes qemu's monitor writes around its
// echo.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// stackLine is a line of "x/24gx": an address and the words there.
var stackLine = regexp.MustCompile(`^[0-9a-f]{16}: 0x`)

// monitor sends commands to qemu's monitor at path, an empty one meaning
// a second's pause, and returns what it answers: the instruction pointer
// lines of "info registers" (each after its CPU#n line) and the words of
// "x".
func monitor(path string, commands ...string) string {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	go func() {
		for _, cmd := range commands {
			if cmd == "" {
				time.Sleep(time.Second)
				continue
			}
			fmt.Fprintf(c, "%s\n", cmd)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	c.SetDeadline(time.Now().Add(time.Duration(len(commands))*200*time.Millisecond + 4*time.Second))
	b, _ := io.ReadAll(c)
	var out []string
	for _, line := range strings.Split(ansi.ReplaceAllString(string(b), ""), "\n") {
		line = strings.TrimSpace(strings.ReplaceAll(line, "\r", ""))
		if strings.HasPrefix(line, "CPU#") || strings.Contains(line, "RIP=") || stackLine.MatchString(line) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// section is one binary's output on the results port.
type section struct {
	out  []byte
	code int // exit status; -1 when the binary never finished
}

// split cuts the results into sections by package.
func split(results []byte) (header []string, sections map[string]*section) {
	sections = map[string]*section{}
	var cur *section
	sc := bufio.NewScanner(bytes.NewReader(results))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case strings.HasPrefix(line, markBegin):
			cur = &section{code: -1}
			sections[strings.TrimPrefix(line, markBegin)] = cur
		case strings.HasPrefix(line, markEnd):
			f := strings.Fields(strings.TrimPrefix(line, markEnd))
			if cur != nil && len(f) == 2 {
				fmt.Sscan(f[1], &cur.code)
			}
			cur = nil
		case cur != nil:
			cur.out = append(append(cur.out, line...), '\n')
		case strings.HasPrefix(line, "@@schedstatd-"):
			header = append(header, line)
		}
	}
	return header, sections
}

// event is one line of test2json's output.
type event struct {
	Action string
	Test   string
	Output string
}

// result is what one top-level test did in the VM.
type result struct {
	name   string
	action string // pass, fail or skip
	output string
	// skipped names the subtests that skipped, each with its reason.
	skipped []string
}

// parse turns a binary's verbose output into its top-level tests' results,
// in order, with go tool test2json.
func parse(t *testing.T, pkg string, out []byte) []result {
	t.Helper()
	cmd := exec.Command("go", "tool", "test2json", "-p", pkg)
	cmd.Stdin = bytes.NewReader(out)
	js, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool test2json: %v", err)
	}
	var order []string
	byName := map[string]*result{}
	own := map[string]string{} // each test's and subtest's own output
	dec := json.NewDecoder(bytes.NewReader(js))
	for dec.More() {
		var e event
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("test2json: %v", err)
		}
		top, _, _ := strings.Cut(e.Test, "/")
		if top == "" {
			continue
		}
		r := byName[top]
		if r == nil {
			r = &result{name: top}
			byName[top] = r
			order = append(order, top)
		}
		r.output += e.Output
		own[e.Test] += e.Output
		if e.Test == top && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
			r.action = e.Action
		}
		if e.Test != top && e.Action == "skip" {
			r.skipped = append(r.skipped, e.Test+": "+lastLog(own[e.Test]))
		}
	}
	rs := make([]result, 0, len(order))
	for _, n := range order {
		rs = append(rs, *byName[n])
	}
	return rs
}

// logLine is a line a test logged, with its file and line.
var logLine = regexp.MustCompile(`(?m)^\s+\S+\.go:\d+: (.*)$`)

// lastLog returns the last line a test logged: the reason a skipped test
// gave, or what a failed one said last.
func lastLog(out string) string {
	if m := logLine.FindAllStringSubmatch(out, -1); m != nil {
		return m[len(m)-1][1]
	}
	return "no reason given"
}
