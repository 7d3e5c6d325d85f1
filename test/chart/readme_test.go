package chart

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/strvals"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/schedstatd/schedstatd/internal/testkit/yamlstrict"
)

// installCommands returns the commands of the README's Install section's
// code block, continuation lines joined, comments dropped.
func installCommands(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Install\n")
	if !ok {
		t.Fatal("README.md has no ## Install section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatal("the Install section has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	var cmds []string
	for _, line := range strings.Split(strings.ReplaceAll(block, "\\\n", " "), "\n") {
		line, _, _ = strings.Cut(line, "#")
		if line = strings.Join(strings.Fields(line), " "); line != "" {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// TestReadmeInstall checks each command of the README's Install section
// against what it installs: the go install path and version, the Go
// version, the image archive make image names, the helm install line
// rendered with its own flags, and the kustomize build of deploy/ that
// kubectl apply -k runs (kubectl embeds the same kustomize). make release
// runs the go install and the image build; the image test imports the
// archive with ctr.
func TestReadmeInstall(t *testing.T) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	version := chrt.Metadata.AppVersion
	seen := map[string]bool{}
	for _, cmd := range installCommands(t) {
		f := strings.Fields(cmd)
		switch {
		case f[0] == "go" && f[1] == "install":
			seen["go"] = true
			if want := "github.com/schedstatd/schedstatd/cmd/schedstatd@" + version; f[2] != want {
				t.Errorf("%q: want go install %s", cmd, want)
			}
		case f[0] == "ctr":
			seen["ctr"] = true
			if want := "schedstatd-" + version + "-amd64.oci.tar"; f[len(f)-1] != want || !slices.Contains(f, "import") {
				t.Errorf("%q: want ctr -n k8s.io images import %s, the name make image gives", cmd, want)
			}
		case f[0] == "helm":
			seen["helm"] = true
			readmeHelm(t, f)
		case f[0] == "kubectl" && f[2] == "-k":
			seen["kustomize"] = true
			kustomizeBuild(t, filepath.Join("../..", f[3]))
		case f[0] == "kubectl" && f[2] == "-f":
			for i := 2; i+1 < len(f); i += 2 {
				if f[i] != "-f" {
					t.Errorf("%q: %s", cmd, f[i])
				}
				if _, err := os.Stat(filepath.Join("../..", f[i+1])); err != nil {
					t.Errorf("%q: %v", cmd, err)
				}
			}
		case strings.HasPrefix(f[0], "sudo"):
		default:
			t.Errorf("the Install section's %q is checked by no test", cmd)
		}
	}
	for _, k := range []string{"go", "ctr", "helm", "kustomize"} {
		if !seen[k] {
			t.Errorf("no %s command in the Install section", k)
		}
	}
	b, _ := os.ReadFile("../../README.md")
	gomod, _ := os.ReadFile("../../go.mod")
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if goVersion == nil || !strings.Contains(string(b), "built with Go "+string(goVersion[1])) {
		t.Errorf("the README does not state go.mod's Go version %s", goVersion)
	}
	mk, _ := os.ReadFile("../../Makefile")
	if !strings.Contains(string(mk), "IMAGE_TAR  ?= schedstatd-$(VERSION)-$(IMAGE_ARCH).oci.tar") {
		t.Error("make image names its archive otherwise than the README says")
	}
}

// readmeHelm renders the README's helm install command, f, with its
// release name, namespace and --set values.
func readmeHelm(t *testing.T, f []string) {
	t.Helper()
	if len(f) < 4 || f[1] != "install" || f[3] != "./charts/schedstatd" {
		t.Fatalf("%q: want helm install <release> ./charts/schedstatd ...", f)
	}
	name, ns := f[2], "default"
	values := map[string]any{}
	for i := 4; i < len(f); i++ {
		switch f[i] {
		case "--namespace":
			i++
			ns = f[i]
		case "--create-namespace":
		case "--set":
			i++
			if err := strvals.ParseInto(f[i], values); err != nil {
				t.Fatalf("--set %s: %v", f[i], err)
			}
		default:
			t.Errorf("helm install flag %s: not known here", f[i])
		}
	}
	vals, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := renderRelease(t, name, ns, string(vals), kube130)
	if err != nil {
		t.Fatalf("helm install %v: %v", f[2:], err)
	}
	var ds appsv1.DaemonSet
	decodeInto(t, docs, "DaemonSet/"+name, &ds)
	var pm podMonitor
	decodeInto(t, docs, "PodMonitor/"+name, &pm)
	var pr prometheusRule
	decodeInto(t, docs, "PrometheusRule/"+name, &pr)
	var cm corev1.ConfigMap
	decodeInto(t, docs, "ConfigMap/"+name+"-dashboard", &cm)
	for what, got := range map[string]string{"DaemonSet": ds.Namespace, "PodMonitor": pm.Namespace, "PrometheusRule": pr.Namespace, "dashboard": cm.Namespace} {
		if got != ns {
			t.Errorf("%s in namespace %s, want %s", what, got, ns)
		}
	}
}

// kustomizeBuild builds the kustomization in dir as kubectl apply -k
// does, and checks the DaemonSet it makes is the chart's default one.
func kustomizeBuild(t *testing.T, dir string) {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	var ds *appsv1.DaemonSet
	for _, part := range splitDocs(string(out)) {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(part, &meta); err != nil {
			t.Fatal(err)
		}
		kinds[meta.Kind] = true
		if meta.Kind == "DaemonSet" {
			ds = &appsv1.DaemonSet{}
			if err := yamlstrict.Decode(part, ds); err != nil {
				t.Fatalf("kustomize build's DaemonSet: %v", err)
			}
		}
	}
	for _, k := range []string{"Namespace", "DaemonSet", "Service"} {
		if !kinds[k] {
			t.Errorf("kustomize build %s makes no %s", dir, k)
		}
	}
	if ds == nil {
		return
	}
	var want appsv1.DaemonSet
	decodeInto(t, mustRender(t, "", kube129), "DaemonSet/schedstatd", &want)
	ignore := cmpopts.IgnoreMapEntries(func(k, _ string) bool { return slices.Contains(helmLabels, k) })
	if d := cmp.Diff(&want, ds, ignore); d != "" {
		t.Errorf("kustomize build's DaemonSet is not the chart's (-chart +kustomize):\n%s", d)
	}
}
