package exitcapture

import (
	"fmt"
	"testing"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/schedstat"
)

// BenchmarkExit is the daemon's cost per exit record on the table's
// goroutine: Drain and Table.Exit, for a batch of exits between two passes.
// "unseen" tasks were born and died between passes (credited in full);
// "tracked" tasks were read by the last pass (their handle is closed and
// their final stretch added). Each op is one record.
func BenchmarkExit(b *testing.B) {
	const batch = 1000
	for _, tracked := range []bool{false, true} {
		name := "unseen"
		if tracked {
			name = "tracked"
		}
		b.Run(fmt.Sprintf("%s/batch=%d", name, batch), func(b *testing.B) {
			k := synth.NewKernel()
			tree := synth.NewTree("/", "/pod")
			table := container.NewTable(tree, k)
			defer table.Close()
			s := offline(batch)
			exits := make([]container.Exit, batch)
			for i := range exits {
				exits[i] = container.Exit{TID: int32(1000 + i), Cgroup: tree.ID("/pod"),
					Final: schedstat.Stat{RunNanoseconds: 5e6, WaitNanoseconds: 1e5, Timeslices: 4}}
			}
			refill := func() {
				if tracked {
					tids := make([]int32, batch)
					for i := range exits {
						k.Exit(exits[i].TID)
						task := k.Spawn(exits[i].TID)
						task.Stat.RunNanoseconds = 1e6
						exits[i].StartTime = task.Start
						tids[i] = exits[i].TID
					}
					tree.Set("/pod", tids...)
				}
				if err := table.Pass(); err != nil {
					b.Fatal(err)
				}
				s.queue = append(s.queue[:0], exits...)
			}
			table.TrackExits()
			refill()
			b.ReportAllocs()
			b.ResetTimer()
			n := 0
			for n < b.N {
				n += s.Drain(table.Exit)
				b.StopTimer()
				refill()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/exit")
			if c := table.Counters(); c.ExitEvents < uint64(b.N) || c.UnattributedExits != 0 {
				b.Fatalf("counters %+v", c)
			}
		})
	}
}

// BenchmarkReceive is the reader goroutine's cost per record: decode and
// queue. The queue is emptied every 1,000 records, as Drain does each
// pass; it keeps its capacity.
func BenchmarkReceive(b *testing.B) {
	s := offline(1000)
	rec := raw(42, 2e9, 7, 1e6, 3, 1)
	b.ReportAllocs()
	for b.Loop() {
		s.receive(rec)
		if len(s.queue) == s.max {
			s.queue = s.queue[:0]
		}
	}
}
