// Command imagebuild builds the schedstatd image as an OCI archive,
// without a container engine or registry (see package imagebuild). From
// the repository's root, as `make image` runs it:
//
//	go run ./internal/imagebuild/cmd -version v0.1.0 -revision $(git rev-parse HEAD) \
//	  -ldflags '-X github.com/prometheus/common/version.Version=v0.1.0 ...' -o schedstatd-v0.1.0.oci.tar
//
// It prints the image's reference and manifest digest.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/schedstatd/schedstatd/internal/imagebuild"
)

func main() {
	var (
		repo     = flag.String("repository", "ghcr.io/schedstatd/schedstatd", "image repository")
		version  = flag.String("version", "", "the version, the image's tag (required)")
		revision = flag.String("revision", "", "the commit the image is built from")
		ldflags  = flag.String("ldflags", "", "go build -ldflags")
		arch     = flag.String("arch", "amd64", "GOARCH of the binary and the image")
		out      = flag.String("o", "", "the OCI archive to write (required)")
	)
	flag.Parse()
	if *version == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "imagebuild: -version and -o are required")
		os.Exit(2)
	}
	if err := run(*repo, *version, *revision, *ldflags, *arch, *out); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(repo, version, revision, ldflags, arch, out string) error {
	created := time.Now().UTC().Truncate(time.Second)
	// As reproducible builds ask: the time a release's inputs name.
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH=%q: %v", s, err)
		}
		created = time.Unix(sec, 0).UTC()
	}
	tmp, err := os.MkdirTemp("", "imagebuild")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "schedstatd")
	if err := imagebuild.BuildBinary(context.Background(), ".", arch, ldflags, bin); err != nil {
		return err
	}
	img, err := imagebuild.Image(imagebuild.Spec{Binary: bin, Arch: arch, Created: created, Labels: imagebuild.Labels(version, revision, created)})
	if err != nil {
		return err
	}
	ref := repo + ":" + version
	if err := imagebuild.WriteArchive(out, img, ref, version); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %s\n", out, ref, digest)
	return nil
}
