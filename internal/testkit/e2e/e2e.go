// Package e2e gates tests that need root, real cgroups or real processes.
//
// On a laptop such tests skip. When SCHEDSTATD_E2E=1 is set, as .ci/run
// does, a missing privilege fails the test instead, so CI can never pass by
// skipping them.
package e2e

import (
	"os"
	"testing"
)

// Enabled reports whether SCHEDSTATD_E2E=1 is set.
func Enabled() bool { return os.Getenv("SCHEDSTATD_E2E") == "1" }

// RequireRoot skips t unless the process runs as root. With SCHEDSTATD_E2E=1
// it fails t instead of skipping.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	Unavailable(t, "needs root")
}

// Unavailable skips t with reason, or fails it when SCHEDSTATD_E2E=1.
func Unavailable(t testing.TB, reason string) {
	t.Helper()
	if Enabled() {
		t.Fatalf("SCHEDSTATD_E2E=1 but %s", reason)
	}
	t.Skip(reason)
}
