// Package testkit holds, in its subpackages, the helpers only tests and
// benchmarks use: helper processes, test cgroups, a bpf filesystem, a real and a fake
// container runtime, a synthetic kernel and the benchmarks' baselines. No
// package the daemon is built from imports them (TestDaemonImportsNoTestkit).
package testkit
