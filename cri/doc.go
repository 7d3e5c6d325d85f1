// Package cri names the containers and pods behind cgroups by asking the
// node's container runtime over the Kubernetes Container Runtime Interface
// (CRI), and keeps the answers in memory for the exporter's Labeler hook.
//
// What it reads: the runtime's ListPodSandbox and ListContainers (all
// states, so containers that exited recently keep their names while their
// cgroups linger), Version when the runtime comes up, and ListImages only
// when a container names its image by id alone. Nothing else on the node.
//
// The rules it keeps:
//
//   - A scrape never waits on the runtime. Labels answers from an
//     immutable cache that one background goroutine replaces; a cache hit
//     takes no lock and allocates nothing.
//   - Every RPC has its own deadline (Config.CallTimeout), so a runtime
//     that hangs holds up only the background refresh, never a scrape,
//     and never for longer than one timeout per call.
//   - The cache is refreshed every Config.Interval, and soon after Labels
//     meets a container id or pod uid it does not know: such misses only
//     signal the refresher, which waits Config.MinGap to gather the other
//     misses of the scrape and so runs at most once per MinGap. An
//     id the runtime did not know at a refresh is not asked for again
//     until Config.RetryAfter has passed, so cgroups that no CRI runtime
//     made (a docker or podman container outside Kubernetes) cost one
//     refresh per RetryAfter at most, however many scrapes there are.
//   - A runtime that is absent, down or slow leaves the labels of
//     containers it named before as they were (the last known names: the
//     series keep their identity across a runtime restart, so rate() over
//     them does not break), leaves new containers unlabelled, and turns
//     schedstatd_runtime_up to 0. One line is logged when the runtime goes
//     down and one when it comes back, not one per failed refresh.
//
// Why the generated client of k8s.io/cri-api on a plain grpc.ClientConn
// and not k8s.io/cri-client: the daemon needs three list calls with a
// deadline on a unix socket. cri-client wraps the same generated client
// with klog logging, OpenTelemetry tracing, component-base metrics and
// feature gates, and brings k8s.io/apimachinery, k8s.io/component-base and
// their dependencies into a binary that otherwise has none of them.
// grpc.NewClient dials "unix://" targets itself and connects lazily, so
// creating a Client never blocks either.
package cri
