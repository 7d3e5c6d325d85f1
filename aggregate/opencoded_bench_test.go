package aggregate

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/schedstatd/schedstatd/internal/testkit/benchx"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// bpfTaskIterAllThreads is BPF_TASK_ITER_ALL_THREADS of enum
// bpf_iter_task_type (include/linux/bpf.h, Linux 6.7): every thread of
// every process.
const bpfTaskIterAllThreads = 1

// stackIter is where the open-coded iterator's state, struct
// bpf_iter_task (three u64), sits on the stack.
const stackIter = -24

// kfuncCall returns a call of the kernel function name, by its id in the
// kernel's BTF. cilium/ebpf resolves kfunc calls of programs it reads
// from ELF objects; programs assembled in Go carry the id themselves.
func kfuncCall(b *testing.B, spec *btf.Spec, name string) asm.Instruction {
	var fn *btf.Func
	if err := spec.TypeByName(name, &fn); err != nil {
		if errors.Is(err, btf.ErrNotFound) {
			b.Skipf("kernel without %s (open-coded task iterators came in Linux 6.7)", name)
		}
		b.Fatal(err)
	}
	id, err := spec.TypeID(fn)
	if err != nil {
		b.Fatal(err)
	}
	return asm.Instruction{
		OpCode:   asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call),
		Src:      asm.PseudoKfuncCall,
		Constant: int64(id),
	}
}

// BenchmarkOpenCodedFloor times the kernel's walk over every task as an
// open-coded iterator (bpf_iter_task_new and _next, Linux 6.7) walks it:
// one run of a program that loops over all threads, against "iter-task",
// the empty iter/task program of BenchmarkIteratorFloor, which the kernel
// calls once per task after finding it by its id, over the same tasks: the
// node's and 20,000 sleeping threads (2,000 with -short). "walk" only
// counts the tasks; "fields" also loads what the iterator program reads of
// each (exit_state, the three counters, the css_set); "storage" looks each
// task's storage up instead (and creates it), as the iterator program
// does; "iterator" is that program itself. The program
// runs by BPF_PROG_TEST_RUN as a raw tracepoint program, under
// rcu_read_lock, which the task iterator needs.
//
//	SCHEDSTATD_E2E=1 go test -run '^$' -bench 'OpenCodedFloor|IteratorFloor|ProgramParts' -benchtime 20x ./aggregate/
func BenchmarkOpenCodedFloor(b *testing.B) {
	s := openSource(b, Options{})
	threads := 20000
	if testing.Short() {
		threads = 2000
	}
	testproc.StartSleepers(b, threads)
	if err := s.Read(); err != nil {
		b.Fatal(err)
	}
	tasks := s.Stats().Tasks
	if tasks < threads {
		b.Fatalf("a read found %d tasks, fewer than the %d sleeping threads", tasks, threads)
	}
	spec, l := sourceLayout(b, s)
	iterNew := kfuncCall(b, spec, "bpf_iter_task_new")
	iterNext := kfuncCall(b, spec, "bpf_iter_task_next")
	iterDestroy := kfuncCall(b, spec, "bpf_iter_task_destroy")
	count, err := ebpf.NewMap(&ebpf.MapSpec{Name: "schedstatd_ocnt", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { count.Close() })
	it := attachEmptyIter(b)
	ctx := make([]byte, 8) // a raw tracepoint's arguments, unused
	b.Run("iter-task", func(b *testing.B) {
		emptySource := &Source{iter: it}
		benchx.EachMode(b, tasks, func() {
			if err := emptySource.run(it); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("iterator", func(b *testing.B) {
		benchx.EachMode(b, tasks, func() {
			if err := s.run(s.iter); err != nil {
				b.Fatal(err)
			}
		})
	})
	for _, v := range []struct {
		name string
		body asm.Instructions // on the task in R0; may clobber R1-R5 and R7
	}{
		{"walk", nil},
		{"fields", asm.Instructions{
			asm.Mov.Reg(asm.R7, asm.R0),
			load(asm.R1, asm.R7, l.exitState), load(asm.R1, asm.R7, l.runtime), load(asm.R1, asm.R7, l.delay),
			load(asm.R1, asm.R7, l.pcount), l.cgroup.TaskCSSSet(asm.R1, asm.R7),
		}},
		{"storage", asm.Instructions{
			asm.Mov.Reg(asm.R2, asm.R0),
			asm.LoadMapPtr(asm.R1, s.coll.Maps[lastName].FD()),
			asm.Mov.Imm(asm.R3, 0),
			asm.Mov.Imm(asm.R4, storageCreate),
			asm.FnTaskStorageGet.Call(),
		}},
	} {
		insns := asm.Instructions{
			asm.Mov.Reg(asm.R1, asm.RFP),
			asm.Add.Imm(asm.R1, stackIter),
			asm.Mov.Imm(asm.R2, 0),
			asm.Mov.Imm(asm.R3, bpfTaskIterAllThreads),
			iterNew,
			asm.Mov.Imm(asm.R6, 0),
			asm.Mov.Reg(asm.R1, asm.RFP).WithSymbol("next"),
			asm.Add.Imm(asm.R1, stackIter),
			iterNext,
			asm.JEq.Imm(asm.R0, 0, "done"),
			asm.Add.Imm(asm.R6, 1),
		}
		insns = append(insns, v.body...)
		insns = append(insns,
			asm.Ja.Label("next"),
			asm.Mov.Reg(asm.R1, asm.RFP).WithSymbol("done"),
			asm.Add.Imm(asm.R1, stackIter),
			iterDestroy,
			// The count goes to the array, not the return value, which
			// the verifier would have to track exactly through the loop.
			asm.StoreImm(asm.RFP, stackKey, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, count.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, stackKey),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.StoreMem(asm.R0, 0, asm.R6, asm.DWord),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
			asm.Return(),
		)
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name: "schedstatd_oc", Type: ebpf.RawTracepoint, License: license, Instructions: insns,
		})
		if err != nil {
			b.Fatalf("%s: %v", v.name, err)
		}
		b.Cleanup(func() { prog.Close() })
		b.Run(v.name, func(b *testing.B) {
			// The count of the program before must not pass for this one's.
			if err := count.Put(uint32(0), uint64(0)); err != nil {
				b.Fatal(err)
			}
			benchx.EachMode(b, tasks, func() {
				if _, err := prog.Run(&ebpf.RunOptions{Context: ctx}); err != nil {
					b.Fatal(err)
				}
			})
			var n uint64
			if err := count.Lookup(uint32(0), &n); err != nil {
				b.Fatal(err)
			}
			if n < uint64(threads) {
				b.Fatalf("the loop walked %d tasks, fewer than the %d sleeping threads", n, threads)
			}
		})
	}
}
