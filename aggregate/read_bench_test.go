package aggregate

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/kbtf"
	"github.com/schedstatd/schedstatd/internal/testkit/benchx"
)

// BenchmarkRead times the parts of a pass of the source: the iterator's
// run over every task on the node (the programs' time is the reading
// thread's), with the move program's claims (compare-and-exchange of each
// counter, as the daemon loads it) and without, the batch read of the
// totals, and the walk.
//
//	go test -run '^$' -bench 'Read/iterator' -count 5 ./aggregate
func BenchmarkRead(b *testing.B) {
	s := openSource(b, Options{Exits: true})
	if err := s.Read(); err != nil {
		b.Fatal(err)
	}
	tasks := s.Stats().Tasks
	moving := openSource(b, Options{Exits: true, Moves: true})
	if err := moving.Read(); err != nil {
		b.Fatal(err)
	}
	for _, src := range []struct {
		name string
		s    *Source
	}{{"iterator", s}, {"iterator-moves", moving}} {
		b.Run(src.name, func(b *testing.B) {
			benchx.EachMode(b, tasks, func() {
				if err := src.s.run(src.s.iter); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
	b.Run("totals", func(b *testing.B) {
		benchx.EachMode(b, tasks, func() {
			if err := s.lookup(); err != nil {
				b.Fatal(err)
			}
		})
		b.ReportMetric(float64(len(s.Totals())), "cgroups")
	})
	b.Run("walk", func(b *testing.B) {
		var l cgroupfs.Listing
		benchx.EachMode(b, tasks, func() {
			if err := s.hier.ListTree(&l); err != nil {
				b.Fatal(err)
			}
		})
		b.ReportMetric(float64(len(l.Cgroups)), "cgroups")
	})
}

// attachEmptyIter attaches an iter/task program that only returns, closed
// when b ends.
func attachEmptyIter(b *testing.B) *link.Iter {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "schedstatd_nopi", Type: ebpf.Tracing, AttachType: ebpf.AttachTraceIter, AttachTo: "task",
		License: license, Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { prog.Close() })
	it, err := link.AttachIter(link.IterOptions{Program: prog})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { it.Close() })
	return it
}

// sourceLayout returns the running kernel's BTF and the layout s's
// programs were assembled for.
func sourceLayout(b *testing.B, s *Source) (*btf.Spec, layout) {
	spec, err := kbtf.KernelSpec()
	if err != nil {
		b.Fatal(err)
	}
	l, err := kernelLayout(spec, s.controller())
	if err != nil {
		b.Fatal(err)
	}
	return spec, l
}

// BenchmarkIteratorFloor times an iter/task program that only returns:
// what the kernel's walk over every task costs before any program work.
func BenchmarkIteratorFloor(b *testing.B) {
	s := openSource(b, Options{})
	it := attachEmptyIter(b)
	if err := s.Read(); err != nil {
		b.Fatal(err)
	}
	empty := &Source{iter: it}
	benchx.EachMode(b, s.Stats().Tasks, func() {
		if err := empty.run(it); err != nil {
			b.Fatal(err)
		}
	})
}
