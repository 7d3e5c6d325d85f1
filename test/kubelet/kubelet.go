//go:build tools

// Package kubelet pins the kubelet that the tests against a real kubelet
// run (cmd/schedstatd's kubelet tests build it with
// `go build k8s.io/kubernetes/cmd/kubelet` in this directory). It is a
// module of its own so that k8s.io/kubernetes never enters schedstatd's
// go.mod: k8s.io/kubernetes is not meant to be required as a library and
// needs each of its 31 staging modules replaced by its release.
package kubelet

import _ "k8s.io/kubernetes/cmd/kubelet"
