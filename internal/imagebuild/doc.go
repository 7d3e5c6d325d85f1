// Package imagebuild builds the schedstatd container image without a
// container engine or a registry: the static daemon binary, built with
// CGO_ENABLED=0, as the one file of one layer on an empty base, with the
// OCI labels, written as an OCI image layout packed in a tar file (what
// `ctr images import`, `podman load`, `skopeo copy oci-archive:` and
// Docker 25 and later take). deploy/Dockerfile builds the same image with
// Docker. `make image` runs its command, ./internal/imagebuild/cmd.
package imagebuild
