// Package deploy holds what runs schedstatd on Kubernetes: the DaemonSet
// and its namespace, a Service, a PodMonitor for the Prometheus Operator, a
// plain Prometheus scrape job, a Dockerfile for a static image, a Grafana
// dashboard, and alerting rules with their promtool unit tests. It has no
// code; its tests check that the manifests decode strictly into the
// Kubernetes API types, that they agree with one another and with the
// daemon's flags, that every query of the dashboard and the alerts names
// metrics the daemon exports, and that the alerts pass their unit tests.
package deploy
