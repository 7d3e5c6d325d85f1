package aggregate

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/schedstatd/schedstatd/internal/testkit/benchx"
)

// BenchmarkProgramParts times cut-down iterator programs over every task on
// the node, to show where the program's time goes: "exit-state" loads the
// context and the task's exit_state; "fields" also loads the three
// counters and the css_set; "storage" (after "exit-state") looks the
// task's storage up and creates it, "storage-lookup" only looks it up.
// BenchmarkRead/iterator is the whole program; BenchmarkIteratorFloor an
// empty one.
func BenchmarkProgramParts(b *testing.B) {
	s := openSource(b, Options{})
	if err := s.Read(); err != nil {
		b.Fatal(err)
	}
	tasks := s.Stats().Tasks
	_, l := sourceLayout(b, s)
	full := iterProgram(l, false, false)
	const head, storage = 6, 13 // instructions up to exit_state, and up to the storage call's result
	for _, v := range []struct {
		name  string
		insns func() asm.Instructions
	}{
		{"exit-state", func() asm.Instructions { return full[:head] }},
		{"fields", func() asm.Instructions {
			return append(full[:head:head], load(asm.R1, asm.R7, l.runtime), load(asm.R1, asm.R7, l.delay),
				load(asm.R1, asm.R7, l.pcount), l.cgroup.TaskCSSSet(asm.R1, asm.R7))
		}},
		{"storage", func() asm.Instructions { return full[:storage] }},
		{"storage-lookup", func() asm.Instructions {
			insns := append(asm.Instructions{}, full[:storage]...)
			insns[9] = asm.Mov.Imm(asm.R4, 0)
			return insns
		}},
	} {
		insns := append(asm.Instructions{}, v.insns()...)
		for i := range insns {
			if insns[i].OpCode.JumpOp() != asm.InvalidJumpOp && insns[i].Reference() != "" {
				insns[i] = insns[i].WithReference("part_out")
			}
			if insns[i].IsLoadFromMap() {
				if err := insns[i].AssociateMap(s.coll.Maps[lastName]); err != nil {
					b.Fatal(err)
				}
			}
		}
		insns = append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol("part_out"), asm.Return())
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "schedstatd_part", Type: ebpf.Tracing, AttachType: ebpf.AttachTraceIter, AttachTo: "task", License: license, Instructions: insns})
		if err != nil {
			b.Fatalf("%s: %v", v.name, err)
		}
		b.Cleanup(func() { prog.Close() })
		it, err := link.AttachIter(link.IterOptions{Program: prog})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { it.Close() })
		part := &Source{iter: it}
		b.Run(v.name, func(b *testing.B) {
			benchx.EachMode(b, tasks, func() {
				if err := part.run(it); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
