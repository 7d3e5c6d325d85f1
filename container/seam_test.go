package container_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAccountingKnowsNoSource lists what the accounting is built from and
// fails if any of it reads tasks: procfs, BPF, or one of the sources.
func TestAccountingKnowsNoSource(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/schedstatd/schedstatd/container").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list found %d packages, too few: %q", len(deps), deps)
	}
	for _, p := range deps {
		for _, source := range []string{
			"github.com/cilium/ebpf",
			"github.com/prometheus/procfs",
			"github.com/schedstatd/schedstatd/procsource",
			"github.com/schedstatd/schedstatd/taskiter",
			"github.com/schedstatd/schedstatd/exitcapture",
			"github.com/schedstatd/schedstatd/aggregate",
			"github.com/schedstatd/schedstatd/internal/kbtf",
		} {
			if p == source || strings.HasPrefix(p, source+"/") {
				t.Errorf("the accounting imports %s", p)
			}
		}
	}
}
