// Package deploy holds what runs schedstatd on Kubernetes: the DaemonSet
// and its namespace, a Service, a PodMonitor for the Prometheus Operator, a
// plain Prometheus scrape job, a Dockerfile for a static image, and a
// Grafana dashboard. It has no code; its tests check that the manifests
// decode strictly into the Kubernetes API types, that they agree with one
// another and with the daemon's flags, and that every query of the
// dashboard names metrics the daemon exports.
package deploy
