package cri

import (
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageName returns the image label of c as kubelet's cAdvisor shows it
// with containerd: the image's name, fully qualified ("nginx:1.27" becomes
// "docker.io/library/nginx:1.27"). Kubelet passes the runtime an image id
// (sha256:...) in ImageSpec.Image and what the pod spec said in
// UserSpecifiedImage (Kubernetes 1.30 and later); the latter is the name.
// Where only an id is known, tags maps image ids to a name from
// ListImages, and failing that the id is the label.
func imageName(c *runtimeapi.Container, tags map[string]string) string {
	spec := c.GetImage()
	if s := spec.GetUserSpecifiedImage(); s != "" {
		return normalizeImage(s)
	}
	if s := spec.GetImage(); s != "" && !isImageID(s) {
		return normalizeImage(s)
	}
	for _, id := range []string{spec.GetImage(), c.GetImageRef(), c.GetImageId()} {
		if name := tags[id]; name != "" {
			return name
		}
	}
	if s := c.GetImageRef(); s != "" && !isImageID(s) {
		return s
	}
	if s := spec.GetImage(); s != "" {
		return s
	}
	return c.GetImageRef()
}

// needsImageList reports whether imageName can name c's image only from
// ListImages.
func needsImageList(c *runtimeapi.Container) bool {
	spec := c.GetImage()
	return spec.GetUserSpecifiedImage() == "" && (spec.GetImage() == "" || isImageID(spec.GetImage()))
}

// imageTags maps each image's id to its first tag, else its first digest.
func imageTags(images []*runtimeapi.Image) map[string]string {
	m := make(map[string]string, len(images))
	for _, img := range images {
		name := ""
		if t := img.GetRepoTags(); len(t) > 0 {
			name = t[0]
		} else if d := img.GetRepoDigests(); len(d) > 0 {
			name = d[0]
		}
		if name != "" && img.GetId() != "" {
			m[img.GetId()] = name
		}
	}
	return m
}

// isImageID reports whether s is an image id rather than a name: a digest
// such as "sha256:<hex>", or 64 bare hex digits.
func isImageID(s string) bool {
	if algo, hex, ok := strings.Cut(s, ":"); ok && (algo == "sha256" || algo == "sha512") {
		return isHex(hex)
	}
	return len(s) == 64 && isHex(s)
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// normalizeImage qualifies an image reference the way containerd names
// images: a reference without a registry is on docker.io, an official
// image without a path is under library/, and one without a tag or digest
// is :latest.
func normalizeImage(ref string) string {
	name, rest := ref, ""
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		name, rest = ref[:i], ref[i:]
	}
	domain, path := "docker.io", name
	if first, after, ok := strings.Cut(name, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		domain, path = first, after
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	name = domain + "/" + path
	// A tag is a colon after the last slash (a colon before it is a port).
	if rest == "" && !strings.Contains(name[strings.LastIndexByte(name, '/')+1:], ":") {
		name += ":latest"
	}
	return name + rest
}
