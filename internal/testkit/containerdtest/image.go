package containerdtest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/schedstatd/schedstatd/internal/imagebuild"
)

// Busybox is where Debian's busybox-static installs its static binary,
// the one file of every image made here.
const Busybox = "/bin/busybox"

// Image is an image to import: Name is what it is imported as (a full
// reference, such as "localhost/schedstatd/busybox:1.35"), Entrypoint the
// command it runs when a container names none (the pause program of a
// sandbox image).
type Image struct {
	Name       string
	Entrypoint []string
}

// busyboxLayer returns a one-layer tar of the static busybox as
// /bin/busybox, with /bin/sh linking to it.
func busyboxLayer() ([]byte, error) {
	bin, err := os.ReadFile(Busybox)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	// A fixed time makes the same image id on every run.
	mtime := time.Unix(0, 0)
	for _, h := range []*tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime},
		{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin)), ModTime: mtime},
		{Name: "bin/sh", Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777, ModTime: mtime},
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777, ModTime: mtime},
	} {
		if err := w.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := w.Write(bin); err != nil {
				return nil, err
			}
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ociImage returns img as an OCI image of one busybox layer.
func ociImage(img Image, layer []byte) (v1.Image, error) {
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layer)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	out, err := mutate.AppendLayers(base, l)
	if err != nil {
		return nil, err
	}
	cf, err := out.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Entrypoint = img.Entrypoint
	cf.Config.Env = []string{"PATH=/bin"}
	return mutate.ConfigFile(out, cf)
}

// writeArchive writes imgs as one OCI layout, each image annotated with
// its name for containerd, packed into the tar file path.
func writeArchive(path string, imgs []Image) error {
	layer, err := busyboxLayer()
	if err != nil {
		return err
	}
	named := make([]imagebuild.Named, 0, len(imgs))
	for _, img := range imgs {
		oci, err := ociImage(img, layer)
		if err != nil {
			return fmt.Errorf("image %s: %w", img.Name, err)
		}
		named = append(named, imagebuild.Named{Image: oci, Ref: img.Name})
	}
	return imagebuild.WriteImages(path, time.Unix(0, 0), named...)
}
