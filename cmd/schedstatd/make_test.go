package main

import (
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// TestMakeTestDepsWaitsForAptLock: every apt-get that make test-deps and
// make kernel-deps run waits for a lock another apt-get holds rather than
// failing at once.
func TestMakeTestDepsWaitsForAptLock(t *testing.T) {
	for _, target := range []string{"test-deps", "kernel-deps"} {
		out, err := exec.Command("make", "-n", "-s", "-C", "../..", target,
			"TEST_TOOLS=schedstatd-no-such-tool:schedstatd-no-such-package", "KERNEL_PKGS=schedstatd-no-such-package").CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", target, err, out)
		}
		script := string(out)
		calls := len(regexp.MustCompile(`apt-get (-o \S+ )*(update|install)`).FindAllString(script, -1))
		if calls < 2 || len(regexp.MustCompile(`apt-get -o DPkg::Lock::Timeout=\d+ (update|install)`).FindAllString(script, -1)) != calls {
			t.Errorf("make %s: %d apt-get calls, not all with -o DPkg::Lock::Timeout=:\n%s", target, calls, script)
		}
	}
}

// TestMakeTidyCheckUsesItsOwnTempDir runs make tidy-check twice at once
// with TMPDIR pointed at an empty directory: both pass, and neither leaves
// a file there nor writes the fixed paths in /tmp an earlier version used
// (which another user's run could own).
func TestMakeTidyCheckUsesItsOwnTempDir(t *testing.T) {
	tmp := t.TempDir()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	errs := make(chan error, 2)
	outs := make(chan string, 2)
	for range 2 {
		go func() {
			cmd := exec.Command("make", "-s", "-C", "../..", "tidy-check", "GO="+gobin)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			out, err := cmd.CombinedOutput()
			outs <- string(out)
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("make tidy-check: %v\n%s", err, <-outs)
		}
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("tidy-check left %d entries in TMPDIR", len(ents))
	}
	for _, old := range []string{"/tmp/schedstatd.go.mod.bak", "/tmp/schedstatd.go.sum.bak"} {
		if st, err := os.Stat(old); err == nil && st.ModTime().After(start) {
			t.Errorf("tidy-check wrote %s", old)
		}
	}
}
