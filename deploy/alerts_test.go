package deploy

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
)

// ruleFile is a Prometheus rule file, as much of it as alerts.yaml may
// hold: a decode that meets another field fails.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// alertQueries returns the expression of every alert in alerts.yaml, by
// alert name.
func alertQueries(t *testing.T) map[string]string {
	t.Helper()
	var f ruleFile
	decodeStrict(t, "alerts.yaml", &f)
	q := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			q["alert "+r.Alert] = r.Expr
		}
	}
	return q
}

// TestAlertRules checks the shape of every alert and that its expression
// selects only metrics a registry like the daemon's exports (the daemon's
// own /metrics is checked too, as root, in TestDaemonSetArgsServe).
func TestAlertRules(t *testing.T) {
	var f ruleFile
	decodeStrict(t, "alerts.yaml", &f)
	seen := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || seen[r.Alert] {
				t.Errorf("group %s: alert %q is unnamed or named twice", g.Name, r.Alert)
			}
			seen[r.Alert] = true
			if r.For == "" {
				t.Errorf("%s fires on one evaluation: give it a for", r.Alert)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "info" && s != "critical" {
				t.Errorf("%s: severity %q", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: no summary or description", r.Alert)
			}
			if !strings.Contains(r.Expr, `job="schedstatd"`) {
				t.Errorf("%s: %q does not select job=\"schedstatd\", the scrape job's name", r.Alert, r.Expr)
			}
		}
	}
	if len(seen) < 5 {
		t.Fatalf("%d alerts in alerts.yaml", len(seen))
	}
	names := registryNames(t)
	// Prometheus's own series of a target, and the one self metric the
	// command makes rather than a package.
	names["up"], names["schedstatd_host_pid_namespace"] = true, true
	checkQueries(t, alertQueries(t), names, "in-process registry")
}

// TestAlertRulesPromtool has promtool check the rules and run their unit
// tests, alerts-tests.yaml: each alert fires on the series it is for, at
// the time its for allows, with its labels and annotations, and not on the
// others. make test installs promtool (Debian's prometheus package) where
// it can.
func TestAlertRulesPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		e2e.Unavailable(t, "promtool is not installed (Debian package prometheus)")
	}
	for _, args := range [][]string{
		{"check", "rules", "alerts.yaml"},
		{"test", "rules", "alerts-tests.yaml"},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
