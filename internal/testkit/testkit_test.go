package testkit

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDaemonImportsNoTestkit lists what the daemon's binary is built from
// and fails if any of it is a test helper.
func TestDaemonImportsNoTestkit(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/schedstatd/schedstatd/cmd/schedstatd").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 20 {
		t.Fatalf("go list found %d packages, too few to be the daemon's: %q", len(deps), deps)
	}
	for _, p := range deps {
		if strings.HasPrefix(p, "github.com/schedstatd/schedstatd/internal/testkit") {
			t.Errorf("the daemon imports the test helper %s", p)
		}
	}
}
