// Package top is the `schedstatd top` view: which cgroups, containers or
// pods on a node wait for a CPU, right now.
//
// A Source gives Samples: the counters of every cgroup at one moment, read
// from a daemon's /metrics over HTTP(S) (HTTPSource) or by running
// accounting passes in this process (LocalSource). Rates turns two Samples
// into per-second rows the way Prometheus's rate() does: a counter that
// went down (a daemon restart) counts its new value as the increase, a
// series that appeared has no rate yet, and a series that vanished is left
// out. Group folds cgroup rows into containers or pods without counting a
// nested cgroup twice. Sort and Filter order and select rows; Table and
// Frame render them to fit a terminal; Once and Live drive the whole. A
// TaskSource (both sources are one) gives the processes and threads of a
// row's cgroups, and TaskRows their rates, per thread known by its id and
// start time, for the drilled-down views (State.Open, State.Back).
//
// Rates are in seconds per second (CPU seconds run or waited per second of
// wall time) and timeslices per second. Nothing in this package keeps
// state between calls but the Live loop, which runs on the caller's
// goroutine and owns its Source from one goroutine of its own.
package top
