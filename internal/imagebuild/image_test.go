package imagebuild

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// staticBinary is a static executable that every test machine has
// (Debian's busybox-static), standing in for the daemon; the image test
// in deploy/ builds and runs the real one.
func staticBinary(t *testing.T) string {
	t.Helper()
	const p = "/bin/busybox"
	if err := CheckStatic(p); err != nil {
		t.Skipf("no static busybox: %v", err)
	}
	return p
}

func testSpec(t *testing.T) Spec {
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	return Spec{Binary: staticBinary(t), Arch: "amd64", Created: created, Labels: Labels("v0.1.0", "abc", created)}
}

// TestImage checks the image's config, manifest and its one layer: the
// binary alone, at /schedstatd, mode 0755, owned by root.
func TestImage(t *testing.T) {
	spec := testSpec(t)
	img, err := Image(spec)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Time.Equal(spec.Created) {
		t.Errorf("os %s arch %s created %v", cf.OS, cf.Architecture, cf.Created)
	}
	if d := cmp.Diff([]string{"/schedstatd"}, cf.Config.Entrypoint); d != "" {
		t.Errorf("entrypoint (-want +got):\n%s", d)
	}
	if cf.Config.User != User || len(cf.Config.Cmd) != 0 || len(cf.Config.Env) != 0 {
		t.Errorf("user %q cmd %v env %v", cf.Config.User, cf.Config.Cmd, cf.Config.Env)
	}
	if d := cmp.Diff(spec.Labels, cf.Config.Labels); d != "" {
		t.Errorf("labels (-want +got):\n%s", d)
	}
	if v := cf.Config.Labels["org.opencontainers.image.version"]; v != "v0.1.0" {
		t.Errorf("version label %q", v)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("manifest %s, config %s: want OCI", m.MediaType, m.Config.MediaType)
	}
	if d := cmp.Diff(spec.Labels, m.Annotations); d != "" {
		t.Errorf("manifest annotations (-want +got):\n%s", d)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers, %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	want, err := os.ReadFile(spec.Binary)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(spec.Created) {
			t.Errorf("%s: mode %o uid %d gid %d mtime %v", h.Name, h.Mode, h.Uid, h.Gid, h.ModTime)
		}
		got, _ := io.ReadAll(tr)
		if string(got) != string(want) {
			t.Errorf("%s: %d bytes, not the binary's %d", h.Name, len(got), len(want))
		}
	}
	if d := cmp.Diff([]string{"schedstatd"}, names); d != "" {
		t.Errorf("layer files (-want +got):\n%s", d)
	}
}

// TestImageRejectsDynamic: a binary that needs a dynamic loader would not
// start on an empty base.
func TestImageRejectsDynamic(t *testing.T) {
	spec := testSpec(t)
	spec.Binary = "/bin/ls"
	if _, err := Image(spec); !errors.Is(err, ErrNotStatic) {
		t.Errorf("image of %s: %v, want ErrNotStatic", spec.Binary, err)
	}
}

// TestWriteArchive writes the archive twice: the same bytes (the same
// inputs make the same file), an OCI layout whose index names the image
// for containerd and by its tag, and whose image is the one written.
func TestWriteArchive(t *testing.T) {
	img, err := Image(testSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	const ref = "ghcr.io/schedstatd/schedstatd:v0.1.0"
	for _, p := range []string{a, b} {
		if err := WriteArchive(p, img, ref, "v0.1.0"); err != nil {
			t.Fatal(err)
		}
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if string(ab) != string(bb) {
		t.Error("two archives of one image differ")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("%d entries left in the directory, want the 2 archives", len(ents))
	}
	// Unpack and read it back as an OCI layout.
	out := t.TempDir()
	f, err := os.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(out, h.Name)
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("%d manifests in the index, want 1", len(im.Manifests))
	}
	d := im.Manifests[0]
	if d.Annotations[ContainerdAnnotation] != ref || d.Annotations[RefNameAnnotation] != "v0.1.0" {
		t.Errorf("index annotations %v", d.Annotations)
	}
	want, _ := img.Digest()
	if d.Digest != want {
		t.Errorf("index names %s, the image is %s", d.Digest, want)
	}
	got, err := idx.Image(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := got.Layers(); err != nil {
		t.Fatal(err)
	}
}
