package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
)

// TestOutsideHostPIDNamespace runs the daemon in a new PID namespace, as in
// a pod without hostPID: it warns once that hostPID: true is needed and
// says so in schedstatd_host_pid_namespace.
func TestOutsideHostPIDNamespace(t *testing.T) {
	e2e.RequireRoot(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		e2e.Unavailable(t, "no unshare(1)")
	}
	d := startWrapped(t, []string{unshare, "--pid", "--fork", "--mount-proc", "--kill-child"})
	mfs := scrape(t, http.DefaultClient, "http://"+d.addr+"/metrics")
	if v := mfs["schedstatd_host_pid_namespace"].GetMetric()[0].GetGauge().GetValue(); v != 0 {
		t.Errorf("schedstatd_host_pid_namespace = %v in a new PID namespace, want 0", v)
	}
	root, _ := value(mfs, "container_schedstat_tasks", "/")
	if root <= 0 || root > 50 {
		t.Errorf("%v tasks seen from a new PID namespace: want only the daemon's own", root)
	}
	if n := strings.Count(d.log(), `msg="not in the host PID namespace`); n != 1 {
		t.Errorf("hostPID warning logged %d times, want once:\n%s", n, d.log())
	}
	// unshare(1) does not pass SIGTERM on: stop the daemon itself.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", d.cmd.Process.Pid, d.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("children of unshare: %q", b)
	}
	syscall.Kill(child, syscall.SIGTERM)
	select {
	case err := <-d.done:
		d.done <- err
		if err != nil {
			t.Errorf("daemon in a PID namespace ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("daemon did not stop on SIGTERM")
	}
}
