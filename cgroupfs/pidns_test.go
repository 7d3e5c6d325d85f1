package cgroupfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
)

// pidnsHelperEnv, when set, makes the test binary print what
// InitialPIDNamespace says from inside it and exit (see TestMain), so a
// test can ask from a new PID namespace.
const pidnsHelperEnv = "SCHEDSTATD_CGROUPFS_TEST_PIDNS"

// pidnsHelper prints InitialPIDNamespace's answer for /proc.
func pidnsHelper() {
	ok, err := InitialPIDNamespace("/proc")
	fmt.Println(ok, err)
}

func TestInitialPIDNamespace(t *testing.T) {
	link, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Skipf("no /proc/self/ns/pid: %v", err)
	}
	want := link == "pid:[4026531836]"
	got, err := InitialPIDNamespace("/proc")
	if err != nil || got != want {
		t.Errorf("InitialPIDNamespace(/proc) = %v, %v; /proc/self/ns/pid is %s", got, err, link)
	}
}

func TestInitialPIDNamespaceErrors(t *testing.T) {
	fake := t.TempDir()
	if err := os.MkdirAll(filepath.Join(fake, "self", "ns"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fake, "self", "ns", "pid"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := InitialPIDNamespace(fake); err != nil || got {
		t.Errorf("InitialPIDNamespace on a plain file = %v, %v; want false, nil", got, err)
	}
	missing := filepath.Join(fake, "missing")
	_, err := InitialPIDNamespace(missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("InitialPIDNamespace(%s) error = %v; want one naming the path", missing, err)
	}
}

// TestInitialPIDNamespaceInChild runs the check in a child process in a
// new PID namespace, as a daemon in a pod without hostPID runs.
func TestInitialPIDNamespaceInChild(t *testing.T) {
	e2e.RequireRoot(t)
	if ok, _ := InitialPIDNamespace("/proc"); !ok {
		t.Skip("this test already runs outside the initial PID namespace")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), pidnsHelperEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "false <nil>" {
		t.Errorf("in a new PID namespace InitialPIDNamespace said %q, want false <nil>", got)
	}
}
