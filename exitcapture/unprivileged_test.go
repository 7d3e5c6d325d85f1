package exitcapture

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/loadmode"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
)

const envProbe = "SCHEDSTATD_EXITCAPTURE_PROBE"

// probe, in a re-executed test binary, selects in the mode the environment
// names, as the daemon does at start, and prints the log and the result.
func probe() {
	mode := os.Getenv(envProbe)
	if mode == "" {
		return
	}
	h, err := cgroupfs.Open(testcg.Root, walked)
	if err != nil {
		fmt.Printf("source=false err=%v\n", err)
		os.Exit(0)
	}
	s, err := Select(loadmode.Mode(mode), Options{Hierarchy: h}, slog.New(slog.NewTextHandler(os.Stdout, nil)))
	fmt.Printf("source=%v err=%v\n", s != nil, err)
	s.Close()
	os.Exit(0)
}

// TestUnprivileged runs the selection as user nobody, whom the kernel
// denies BPF: auto falls back with one warning, on fails with an error
// that names the missing privileges, and CAP_BPF with CAP_PERFMON is
// enough to load. Root in a PID namespace of its own is refused too, as
// records name tasks by their host ids.
func TestUnprivileged(t *testing.T) {
	e2e.RequireRoot(t)
	// The test binary sits in a directory only root may enter.
	dir, err := os.MkdirTemp("", "schedstatd-probe-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "probe")
	if err := copyFile(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const capPerfmon, capBPF = 38, 39
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	for _, tc := range []struct {
		mode, want string
		user       *syscall.Credential
		caps       []uintptr
		pidns      bool
	}{
		{"auto", "level=WARN msg=\"exit capture unavailable, polling only", nobody, nil, false},
		{"on", "needs CAP_BPF and CAP_PERFMON, or root", nobody, nil, false},
		{"on", "source=true", nobody, []uintptr{capBPF, capPerfmon}, false},
		{"on", "needs CAP_BPF and CAP_PERFMON, or root", nobody, []uintptr{capBPF}, false},
		{"on", "not in the host PID namespace", nil, nil, true},
	} {
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), envProbe+"="+tc.mode, "GORACE=atexit_sleep_ms=0")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: tc.user, AmbientCaps: tc.caps}
		if tc.pidns {
			cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWPID
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", tc.mode, err, out)
		}
		if !strings.Contains(string(out), tc.want) || strings.Contains(string(out), "source=true") != (len(tc.caps) == 2) {
			t.Errorf("%s as %v with capabilities %v (new PID namespace: %v) said %q, want %q", tc.mode, tc.user, tc.caps, tc.pidns, out, tc.want)
		}
		if tc.mode == "auto" && (strings.Count(string(out), "\n") != 2 || !strings.Contains(string(out), "err=<nil>")) {
			t.Errorf("auto as nobody said %q, want one log line and no error", out)
		}
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
