// Package collector runs the accounting passes of a daemon and turns their
// snapshots into Prometheus metrics.
//
// A Poller owns the task table: one goroutine runs a pass every interval
// and whenever a scrape asks for one. Scrapes that ask while a pass runs
// share the next pass, so a burst of scrapes costs at most two passes and a
// pass never runs twice at once. An Exporter reads the Poller's latest
// snapshot and emits constant metrics, so the registry keeps no per-series
// state and a removed cgroup's series simply stops. FreshView lets a
// request read the table after the pass it shares, as the tasks API does
// to list one cgroup's tasks (CgroupTasks, named by NewCgroupTasks).
package collector
