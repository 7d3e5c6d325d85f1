package state_test

import (
	"fmt"
	"testing"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/synth"
	"github.com/schedstatd/schedstatd/state"
)

// syntheticState returns the state of a table of tasks threads in pods of
// 9 containers, each thread having run a while.
func syntheticState(b *testing.B, tasks int) container.State {
	k, tree := synth.NewKernel(), synth.NewTree("/", "/kubepods")
	var ctrs []string
	for p := range tasks/100 + 1 {
		pod := fmt.Sprintf("/kubepods/pod%08x-1111-2222-3333-444455556666", p)
		tree.Mkdir(pod)
		for c := range 9 {
			ctr := fmt.Sprintf("%s/%064x", pod, c)
			tree.Mkdir(ctr)
			ctrs = append(ctrs, ctr)
		}
	}
	byCtr := map[string][]int32{}
	for i := range tasks {
		tid := int32(1000 + i)
		k.Spawn(tid).Stat = stat(uint64(i)*1e7+12345, uint64(i)*1e6+789, uint64(i)*10+3)
		ctr := ctrs[i%len(ctrs)]
		byCtr[ctr] = append(byCtr[ctr], tid)
	}
	for ctr, tids := range byCtr {
		tree.Set(ctr, tids...)
	}
	table := container.NewTable(tree, k)
	b.Cleanup(func() { table.Close() })
	if err := table.Pass(); err != nil {
		b.Fatal(err)
	}
	return table.State()
}

// BenchmarkDecode is what a start costs: decoding and checking the file,
// and restoring a table from it.
func BenchmarkDecode(b *testing.B) {
	for _, tasks := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("tasks=%d", tasks), func(b *testing.B) {
			file := state.Append(nil, &state.File{Origin: origin, Table: syntheticState(b, tasks)})
			b.ReportAllocs()
			for b.Loop() {
				f, err := state.Decode(file)
				if err != nil {
					b.Fatal(err)
				}
				t := container.NewTable(nil, nil)
				if err := t.Restore(f.Table); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(file)), "state-bytes")
		})
	}
}
