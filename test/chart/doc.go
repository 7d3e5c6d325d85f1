// Package chart tests the Helm chart charts/schedstatd with Helm itself,
// pinned as a Go module (helm.sh/helm/v3): helm lint, helm template with
// the default values and others, helm package. Each rendering is decoded
// strictly into the k8s.io/api types, and with the default values the
// DaemonSet and Service are those of deploy/, which the image test runs.
// It is a module of its own so that Helm's dependencies stay out of
// schedstatd's go.mod; `make test-chart` (part of `make test`) runs it.
package chart
