package cgroupfs

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary runs itself as a helper process when helperEnv is set:
// "spin" starts threadsEnv threads that spin once told to; "pidns" prints
// what InitialPIDNamespace says from inside the helper.
const (
	helperEnv  = "SCHEDSTATD_CGROUPFS_TEST_HELPER"
	threadsEnv = "SCHEDSTATD_CGROUPFS_TEST_THREADS"
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "spin":
		n, _ := strconv.Atoi(os.Getenv(threadsEnv))
		spin(n)
	case "pidns":
		ok, err := InitialPIDNamespace("/proc")
		fmt.Println(ok, err)
	}
	os.Exit(0)
}

// spin starts n threads, each a goroutine locked to its own OS thread,
// says "ready" on stdout, and on the first byte from stdin lets them spin.
// It exits when stdin closes.
func spin(n int) {
	start := make(chan struct{})
	var ready sync.WaitGroup
	ready.Add(n)
	for range n {
		go func() {
			runtime.LockOSThread()
			ready.Done()
			<-start
			for {
			}
		}()
	}
	ready.Wait()
	fmt.Println("ready")
	var b [1]byte
	if _, err := os.Stdin.Read(b[:]); err == nil {
		close(start)
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// helper is a running helper process.
type helper struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	Pid     int
	threads int // started by the helper, besides the Go runtime's
}

// startHelper starts a helper process with threads waiting threads and
// waits until they exist. t's cleanup kills and reaps it.
func startHelper(t *testing.T, threads int) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=spin", threadsEnv+"="+strconv.Itoa(threads))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}
	return &helper{cmd: cmd, stdin: stdin, Pid: cmd.Process.Pid, threads: threads}
}

// Go lets the helper's threads spin.
func (h *helper) Go(t *testing.T) {
	t.Helper()
	if _, err := h.stdin.Write([]byte{'g'}); err != nil {
		t.Fatal(err)
	}
}

// Stop stops the helper with SIGSTOP and waits until every thread is
// stopped, so its thread list and CPU times hold still.
func (h *helper) Stop(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(h.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !h.stopped(t) {
		if time.Now().After(deadline) {
			t.Fatalf("helper %d did not stop", h.Pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// Cont resumes the helper after Stop.
func (h *helper) Cont(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(h.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// stopped reports whether every thread of h is in state T (stopped).
func (h *helper) stopped(t *testing.T) bool {
	for _, tid := range h.TIDs(t) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", h.Pid, tid))
		if err != nil {
			return false
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i < 0 || !strings.HasPrefix(s[i:], ") T") {
			return false
		}
	}
	return true
}

// TIDs returns the helper's thread ids from /proc/<pid>/task, sorted:
// its own threads and the Go runtime's.
func (h *helper) TIDs(t *testing.T) []int32 {
	t.Helper()
	tids := procTIDs(t, h.Pid)
	if len(tids) <= h.threads {
		t.Fatalf("helper %d has threads %v, want more than %d", h.Pid, tids, h.threads)
	}
	return tids
}

// procTIDs returns the thread ids of process pid, sorted.
func procTIDs(t *testing.T, pid int) []int32 {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		t.Fatal(err)
	}
	var out []int32
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, int32(n))
	}
	slices.Sort(out)
	return out
}

// runNanoseconds returns the first field of /proc/<tid>/schedstat, the
// thread's time on a CPU in nanoseconds.
func runNanoseconds(t *testing.T, tid int32) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", tid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	n, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil || len(f) != 3 {
		t.Fatalf("/proc/%d/schedstat: %q", tid, b)
	}
	return n
}
