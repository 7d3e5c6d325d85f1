package imagebuild

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Annotations of an image in an OCI layout's index that name it: the
// OCI one holds the tag, containerd's import takes the full reference.
const (
	RefNameAnnotation    = "org.opencontainers.image.ref.name"
	ContainerdAnnotation = "io.containerd.image.name"
)

// WriteArchive writes img as an OCI image layout, named ref (a full
// reference, such as ghcr.io/schedstatd/schedstatd:v0.1.0) in its index,
// packed into the tar file path. Its entries carry the image's creation
// time, so the same image makes the same file.
func WriteArchive(path string, img v1.Image, ref string, tag string) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	return WriteImages(path, cf.Created.Time, Named{Image: img, Ref: ref, Tag: tag})
}

// Named is an image and the names an OCI layout's index gives it: Ref,
// the full reference containerd's import takes, and Tag, if not empty.
type Named struct {
	Image    v1.Image
	Ref, Tag string
}

// WriteImages writes imgs as one OCI image layout packed into the tar
// file path, the form `ctr images import` takes, its entries stamped with
// mtime.
func WriteImages(path string, mtime time.Time, imgs ...Named) error {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".layout")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	for _, img := range imgs {
		names := map[string]string{ContainerdAnnotation: img.Ref}
		if img.Tag != "" {
			names[RefNameAnnotation] = img.Tag
		}
		if err := p.AppendImage(img.Image, layout.WithAnnotations(names)); err != nil {
			return fmt.Errorf("image %s: %w", img.Ref, err)
		}
	}
	tmp := path + ".tmp"
	if err := tarDir(tmp, dir, mtime); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// tarDir writes the files under dir into a tar file at path, named
// relative to dir, in lexical order, with mtime.
func tarDir(path, dir string, mtime time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime, Format: tar.FormatPAX}
		if d.IsDir() {
			h.Typeflag, h.Mode, h.Name = tar.TypeDir, 0o755, h.Name+"/"
			return w.WriteHeader(h)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, info.Size()
		if err := w.WriteHeader(h); err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(w, src)
		return err
	})
	if err == nil {
		err = w.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
