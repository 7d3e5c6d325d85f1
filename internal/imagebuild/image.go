package imagebuild

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Binary is where the image holds the daemon, its entrypoint.
const Binary = "/schedstatd"

// User is the image's default user, 65532 (distroless's nonroot): where nothing
// says otherwise, the daemon runs without root. The DaemonSet sets its
// own (deploy/README.md says why uid 0).
const User = "65532:65532"

// Port is the port the daemon listens on by default.
const Port = "10271/tcp"

// ErrNotStatic is returned for a binary that needs a dynamic loader,
// which an image with nothing else in it lacks.
var ErrNotStatic = errors.New("not a statically linked executable")

// Spec says what image to make. Labels are the OCI labels
// (org.opencontainers.image.*), set on the image config (as a
// Dockerfile's LABEL does) and as the manifest's annotations.
type Spec struct {
	// Binary is the path of the static daemon binary.
	Binary string
	// Arch is its GOARCH, the image's architecture.
	Arch string
	// Created is the image's creation time, and every file's mtime: the
	// same inputs make the same image digest.
	Created time.Time
	Labels  map[string]string
}

// Labels returns the OCI labels of a schedstatd image of version, built
// from revision at created.
func Labels(version, revision string, created time.Time) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":         "schedstatd",
		"org.opencontainers.image.description":   "Per-cgroup CPU run time, runqueue wait and timeslices from the kernel's schedstat, as Prometheus metrics",
		"org.opencontainers.image.source":        "https://github.com/schedstatd/schedstatd",
		"org.opencontainers.image.url":           "https://github.com/schedstatd/schedstatd",
		"org.opencontainers.image.documentation": "https://github.com/schedstatd/schedstatd/blob/main/deploy/README.md",
		"org.opencontainers.image.licenses":      "Apache-2.0",
		"org.opencontainers.image.version":       version,
		"org.opencontainers.image.revision":      revision,
		"org.opencontainers.image.created":       created.UTC().Format(time.RFC3339),
	}
}

// Image returns the image of spec: an OCI manifest of one layer, the
// binary at Binary with mode 0755, on an empty base.
func Image(spec Spec) (v1.Image, error) {
	if err := CheckStatic(spec.Binary); err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(spec.Binary)
	if err != nil {
		return nil, err
	}
	layer, err := layerTar(bin, spec.Created)
	if err != nil {
		return nil, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layer)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     l,
		History:   v1.History{Created: v1.Time{Time: spec.Created}, CreatedBy: "imagebuild: COPY schedstatd " + Binary},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", spec.Arch
	cf.Created = v1.Time{Time: spec.Created}
	cf.Config.Entrypoint = []string{Binary}
	cf.Config.User = User
	cf.Config.ExposedPorts = map[string]struct{}{Port: {}}
	cf.Config.Labels = spec.Labels
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, spec.Labels).(v1.Image), nil
}

// layerTar returns the image's one layer: the binary, owned by root.
func layerTar(bin []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	h := &tar.Header{Name: Binary[1:], Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin)), ModTime: mtime, Format: tar.FormatPAX}
	if err := w.WriteHeader(h); err != nil {
		return nil, err
	}
	if _, err := w.Write(bin); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// CheckStatic returns an error wrapping ErrNotStatic unless path is an
// ELF executable without a program interpreter, one that runs in an image
// or initramfs that holds nothing else.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNotStatic, path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%w: %s asks for a dynamic loader", ErrNotStatic, path)
		}
	}
	return nil
}
