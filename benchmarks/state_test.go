package benchmarks_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/state"
)

// BenchmarkStateWrite compares, in one run, a pass of the table over a real
// tree of sleeping threads with the write of that table's state file as
// the daemon does it after a pass (State, encoding, write, fsync, rename,
// fsync of the directory): to a tmpfs, as the host's /run is on a node,
// and to this machine's disk; and the encoding alone. write/pass is a
// write's time over the median pass's, measured just before.
func BenchmarkStateWrite(b *testing.B) {
	threads, pods := 10000, 20
	if testing.Short() {
		threads, pods = 2000, 4
	}
	e2e.RequireRoot(b)
	threads = fitThreads(b, threads)
	b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
		top, leaves := makePods(b, pods)
		p := testproc.StartSleepers(b, threads)
		place(b, top, leaves, p)
		table := container.NewTable(openTop(b, top), procsource.Opener{Root: "/proc"})
		tasks := warm(b, table).Cgroups[0].Tasks
		if tasks < threads {
			b.Fatalf("a pass read %d tasks of %d threads", tasks, threads)
		}
		passTime := func() time.Duration {
			var ds []time.Duration
			for range 9 {
				start := time.Now()
				if err := table.Pass(); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
			}
			return median(ds)
		}
		b.Run("pass", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := table.Pass(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tasks), "ns/task")
		})
		b.Run("encode", func(b *testing.B) {
			pass := passTime()
			var st container.State
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				table.StateInto(&st)
				buf = state.Append(buf[:0], &state.File{Table: st})
			}
			report(b, pass, tasks, len(buf))
		})
		for _, dir := range []struct{ name, path string }{{"tmpfs", "/dev/shm"}, {"disk", os.TempDir()}} {
			b.Run("write="+dir.name, func(b *testing.B) {
				d, err := os.MkdirTemp(dir.path, "schedstatd-bench-")
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { os.RemoveAll(d) })
				k := state.NewKeeper(state.Config{Path: d + "/state", Interval: time.Hour})
				k.Restore(container.NewTable(nil, nil)) // takes the lock; no file yet
				b.Cleanup(func() { k.Close() })
				pass := passTime()
				b.ReportAllocs()
				for b.Loop() {
					k.AfterPass(table, true)
				}
				fi, err := os.Stat(d + "/state")
				if err != nil {
					b.Fatal(err)
				}
				report(b, pass, tasks, int(fi.Size()))
			})
		}
	})
}

// report adds the state's size and the ratio of a write to a pass.
func report(b *testing.B, pass time.Duration, tasks, size int) {
	per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(per/float64(pass.Nanoseconds()), "write/pass")
	b.ReportMetric(float64(pass.Nanoseconds())/float64(tasks), "pass-ns/task")
	b.ReportMetric(float64(size), "state-bytes")
}

func median(ds []time.Duration) time.Duration {
	for i := range ds {
		for j := i + 1; j < len(ds); j++ {
			if ds[j] < ds[i] {
				ds[i], ds[j] = ds[j], ds[i]
			}
		}
	}
	return ds[len(ds)/2]
}
