package chart

import (
	"bytes"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"

	"github.com/schedstatd/schedstatd/internal/testkit/yamlstrict"
)

// Paths from this directory.
const (
	chartDir  = "../../charts/schedstatd"
	deployDir = "../../deploy"
)

// The release the equality with deploy/ is checked for: its name and
// namespace are deploy/'s.
const (
	releaseName      = "schedstatd"
	releaseNamespace = "schedstatd"
)

// TestMain silences the line Helm logs each time it loads the chart, for
// each of its two links (files/ links to deploy/alerts.yaml and the
// dashboard); TestPackage checks what the links bring.
func TestMain(m *testing.M) {
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}

// doc is one rendered object: its kind and name, and its YAML.
type doc struct {
	kind, name string
	yaml       []byte
}

// render runs helm template on the chart with vals (YAML) for a cluster
// of kubeVersion, and returns the objects by "Kind/name".
func render(t *testing.T, vals string, kubeVersion string) (map[string]doc, error) {
	t.Helper()
	return renderRelease(t, releaseName, releaseNamespace, vals, kubeVersion)
}

// renderRelease is render for the release name in namespace.
func renderRelease(t *testing.T, name, namespace, vals string, kubeVersion string) (map[string]doc, error) {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal([]byte(vals), &values); err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = name, namespace
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	install.KubeVersion = kv
	rel, err := install.Run(chrt, values)
	if err != nil {
		return nil, err
	}
	docs := map[string]doc{}
	for _, part := range splitDocs(rel.Manifest) {
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(part, &meta); err != nil {
			t.Fatalf("a rendered document: %v\n%s", err, part)
		}
		if meta.Kind == "" {
			continue // only comments
		}
		key := meta.Kind + "/" + meta.Metadata.Name
		if _, dup := docs[key]; dup {
			t.Fatalf("%s rendered twice", key)
		}
		docs[key] = doc{kind: meta.Kind, name: meta.Metadata.Name, yaml: part}
	}
	return docs, nil
}

// mustRender is render that fails the test on an error.
func mustRender(t *testing.T, vals, kubeVersion string) map[string]doc {
	t.Helper()
	docs, err := render(t, vals, kubeVersion)
	if err != nil {
		t.Fatalf("helm template with %q: %v", vals, err)
	}
	return docs
}

// splitDocs splits a multi-document YAML stream at its "---" lines.
func splitDocs(manifest string) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	for _, line := range strings.SplitAfter(manifest, "\n") {
		if strings.TrimRight(line, "\n") == "---" {
			docs = append(docs, bytes.Clone(cur.Bytes()))
			cur.Reset()
			continue
		}
		cur.WriteString(line)
	}
	return append(docs, cur.Bytes())
}

// decodeInto strictly decodes the rendered object key of docs into out.
func decodeInto(t *testing.T, docs map[string]doc, key string, out any) {
	t.Helper()
	d, ok := docs[key]
	if !ok {
		var keys []string
		for k := range docs {
			keys = append(keys, k)
		}
		t.Fatalf("no %s rendered; rendered: %v", key, keys)
	}
	if err := yamlstrict.Decode(d.yaml, out); err != nil {
		t.Fatalf("%s: %v\n%s", key, err, d.yaml)
	}
}

// decodeFile strictly decodes deploy/name into out.
func decodeFile(t *testing.T, name string, out any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deployDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yamlstrict.Decode(data, out); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}
