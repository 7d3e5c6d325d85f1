package deploy

import (
	"bytes"
	"flag"
	"os"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/schedstatd/schedstatd/internal/testkit/yamlstrict"
)

var update = flag.Bool("update", false, "rewrite prometheusrule.yaml from alerts.yaml")

// prometheusRuleHeader heads the generated prometheusrule.yaml.
const prometheusRuleHeader = `# Generated from alerts.yaml (make update-golden): its groups as a
# PrometheusRule of the Prometheus Operator, applied apart from
# kustomization.yaml, as podmonitor.yaml is. The release label is the one
# kube-prometheus-stack's Prometheus selects (see podmonitor.yaml).
`

// prometheusRule returns alerts.yaml's groups as a PrometheusRule.
func prometheusRule(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rules map[string]any
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata": map[string]any{
			"name":      "schedstatd",
			"namespace": "schedstatd",
			"labels":    map[string]string{"app.kubernetes.io/name": "schedstatd", "app.kubernetes.io/instance": "schedstatd", "release": "kube-prometheus-stack"},
		},
		"spec": map[string]any{"groups": rules["groups"]},
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(prometheusRuleHeader), out...)
}

// TestPrometheusRuleGolden: prometheusrule.yaml holds alerts.yaml's groups
// as they are; -update (make update-golden) rewrites it.
func TestPrometheusRuleGolden(t *testing.T) {
	want := prometheusRule(t)
	if *update {
		if err := os.WriteFile("prometheusrule.yaml", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("prometheusrule.yaml is not alerts.yaml's groups: run make update-golden (go test ./deploy -run Golden -update)")
	}
	// And it decodes, its groups as alerts.yaml's.
	var pr struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
		Spec       ruleFile       `json:"spec"`
	}
	decodeStrict(t, "prometheusrule.yaml", &pr)
	var f ruleFile
	decodeStrict(t, "alerts.yaml", &f)
	if len(pr.Spec.Groups) != len(f.Groups) || len(f.Groups) == 0 {
		t.Errorf("%d groups, alerts.yaml has %d", len(pr.Spec.Groups), len(f.Groups))
	}
}

// TestScrapeRBAC checks the Role and RoleBinding the plain scrape job
// needs: pods listed and watched in the namespace it discovers, bound to a
// service account.
func TestScrapeRBAC(t *testing.T) {
	data, err := os.ReadFile("scrape-rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(data, []byte("\n---\n"))
	if len(docs) != 2 {
		t.Fatalf("%d documents, want a Role and a RoleBinding", len(docs))
	}
	var role rbacv1.Role
	var binding rbacv1.RoleBinding
	if err := yamlstrict.Decode(docs[0], &role); err != nil {
		t.Fatal(err)
	}
	if err := yamlstrict.Decode(docs[1], &binding); err != nil {
		t.Fatal(err)
	}
	if role.Kind != "Role" || binding.Kind != "RoleBinding" {
		t.Fatalf("kinds %s, %s", role.Kind, binding.Kind)
	}
	m := load(t)
	ns := m.sc.ScrapeConfigs[0].KubernetesSDConfigs[0].Namespaces.Names
	if len(ns) != 1 || role.Namespace != ns[0] || binding.Namespace != ns[0] {
		t.Errorf("Role in %s, RoleBinding in %s; the scrape job discovers pods in %v", role.Namespace, binding.Namespace, ns)
	}
	verbs := map[string]bool{}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if g == "" && res == "pods" {
					for _, v := range r.Verbs {
						verbs[v] = true
					}
				}
			}
		}
	}
	for _, v := range []string{"get", "list", "watch"} {
		if !verbs[v] {
			t.Errorf("the Role does not allow %s on pods", v)
		}
	}
	if binding.RoleRef.Kind != "Role" || binding.RoleRef.Name != role.Name || binding.RoleRef.APIGroup != rbacv1.GroupName {
		t.Errorf("the RoleBinding refers to %+v, not the Role %s", binding.RoleRef, role.Name)
	}
	if len(binding.Subjects) != 1 || binding.Subjects[0].Kind != rbacv1.ServiceAccountKind || binding.Subjects[0].Namespace == "" {
		t.Errorf("subjects %+v: want Prometheus's service account", binding.Subjects)
	}
}
