package collector

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
)

// TestPromtoolCheckMetrics has promtool lint everything the exporter
// serves over the fixture, each kind of series present: names, units,
// help and types as Prometheus's own linter wants them. make test
// installs promtool (Debian's prometheus package) where it can.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		e2e.Unavailable(t, "promtool is not installed (Debian package prometheus)")
	}
	_, reg := fixtureExporter(t)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
