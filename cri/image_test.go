package cri

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestNormalizeImage(t *testing.T) {
	tests := []struct{ in, want string }{
		{"nginx", "docker.io/library/nginx:latest"},
		{"nginx:1.27", "docker.io/library/nginx:1.27"},
		{"bitnami/redis:7", "docker.io/bitnami/redis:7"},
		{"docker.io/nginx:1.27", "docker.io/library/nginx:1.27"},
		{"index.docker.io/library/nginx", "docker.io/library/nginx:latest"},
		{"registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"},
		{"localhost/app", "localhost/app:latest"},
		{"registry.example.com:5000/team/envoy", "registry.example.com:5000/team/envoy:latest"},
		{"registry.example.com:5000/team/envoy:v1", "registry.example.com:5000/team/envoy:v1"},
		{"nginx@sha256:0123abcd", "docker.io/library/nginx@sha256:0123abcd"},
		{"quay.io/app:v2@sha256:0123abcd", "quay.io/app:v2@sha256:0123abcd"},
	}
	for _, tt := range tests {
		if got := normalizeImage(tt.in); got != tt.want {
			t.Errorf("normalizeImage(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestImageName(t *testing.T) {
	const id = "sha256:" + dockerID
	tags := map[string]string{id: "docker.io/library/busybox:1.36"}
	tests := []struct {
		name string
		c    *runtimeapi.Container
		tags map[string]string
		want string
	}{
		{"user specified image wins", &runtimeapi.Container{Image: &runtimeapi.ImageSpec{Image: id, UserSpecifiedImage: "busybox:1.36"}, ImageRef: id},
			nil, "docker.io/library/busybox:1.36"},
		{"image spec is a name", &runtimeapi.Container{Image: &runtimeapi.ImageSpec{Image: "quay.io/app:v2"}}, nil, "quay.io/app:v2"},
		{"id named by ListImages", &runtimeapi.Container{Image: &runtimeapi.ImageSpec{Image: id}, ImageRef: id}, tags, "docker.io/library/busybox:1.36"},
		{"image ref is a digest name", &runtimeapi.Container{Image: &runtimeapi.ImageSpec{Image: id}, ImageRef: "docker.io/library/busybox@sha256:" + dockerID},
			nil, "docker.io/library/busybox@sha256:" + dockerID},
		{"id alone", &runtimeapi.Container{Image: &runtimeapi.ImageSpec{Image: id}, ImageRef: id}, nil, id},
		{"nothing", &runtimeapi.Container{}, nil, ""},
	}
	for _, tt := range tests {
		if got := imageName(tt.c, tt.tags); got != tt.want {
			t.Errorf("%s: imageName = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestIsImageID(t *testing.T) {
	for s, want := range map[string]bool{
		"sha256:" + dockerID: true,
		dockerID:             true,
		"nginx:1.27":         false,
		"sha256:":            false,
		"sha256:XYZ":         false,
		"":                   false,
	} {
		if got := isImageID(s); got != want {
			t.Errorf("isImageID(%q) = %v, want %v", s, got, want)
		}
	}
}
