package benchmarks_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/schedstatd/schedstatd/collector"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/synth"
	"github.com/schedstatd/schedstatd/internal/testrun"
	"github.com/schedstatd/schedstatd/schedstat"
)

// BenchmarkMetrics renders /metrics for a table of 1,000 cgroups shaped as
// a Kubernetes node with the systemd cgroup driver: one op gathers the
// exporter's series through a prometheus registry and encodes them in the
// text format, as a scrape does after its pass. It reports ns/cgroup and
// the size of the exposition.
func BenchmarkMetrics(b *testing.B) {
	const cgroups = 1000
	b.Run(fmt.Sprintf("cgroups=%d", cgroups), func(b *testing.B) {
		tree, k := kubeTree(cgroups)
		p := collector.NewPoller(container.NewTable(tree, k), time.Hour, slog.New(slog.DiscardHandler))
		testrun.Background(b, p.Run)
		s, err := p.Fresh(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if len(s.Cgroups) != cgroups {
			b.Fatalf("snapshot of %d cgroups, want %d", len(s.Cgroups), cgroups)
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(collector.NewExporter(p))
		format := expfmt.NewFormat(expfmt.TypeTextPlain)
		var buf bytes.Buffer
		series := 0
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			mfs, err := reg.Gather()
			if err != nil {
				b.Fatal(err)
			}
			enc := expfmt.NewEncoder(&buf, format)
			series = 0
			for _, mf := range mfs {
				series += len(mf.Metric)
				if err := enc.Encode(mf); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/cgroups, "ns/cgroup")
		b.ReportMetric(float64(buf.Len()), "exposition-bytes")
		b.ReportMetric(float64(series), "series")
	})
}

// kubeTree returns a synthetic tree of n cgroups under kubepods.slice,
// pods of three containers each, one task per container, and the kernel
// holding those tasks.
func kubeTree(n int) (*synth.Tree, *synth.Kernel) {
	const (
		kube = "/kubepods.slice"
		qos  = kube + "/kubepods-burstable.slice"
	)
	tree := synth.NewTree("/", kube, qos)
	k := synth.NewKernel()
	tid := int32(0)
	for pod := 0; len(tree.Cgroups) < n; pod++ {
		uid := fmt.Sprintf("%08x_%04x_%04x_%04x_%012x", pod, pod, pod, pod, pod)
		podDir := qos + "/kubepods-burstable-pod" + uid + ".slice"
		tree.Mkdir(podDir)
		for c := 0; c < 3 && len(tree.Cgroups) < n; c++ {
			ctr := podDir + fmt.Sprintf("/cri-containerd-%064x.scope", pod*3+c)
			tree.Mkdir(ctr)
			tid++
			k.Spawn(tid).Stat = schedstat.Stat{RunNanoseconds: uint64(tid) * 1e9, WaitNanoseconds: uint64(tid) * 1e7, Timeslices: uint64(tid) * 100}
			tree.Set(ctr, tid)
		}
	}
	return tree, k
}
