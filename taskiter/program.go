package taskiter

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/schedstatd/schedstatd/internal/kbtf"
)

// progName is the program's name, as bpftool and /proc/<pid>/fdinfo show
// it (at most 15 bytes).
const progName = "schedstatd_iter"

// license is the program's license string. The kernel loads tracing
// programs only under a GPL-compatible one.
const license = "Dual MIT/GPL"

// Offsets in a record, as the program writes it into the seq_file: native
// byte order, 48 bytes.
const (
	recTID     = 0  // u32 the task's id in the reader's PID namespace
	recExit    = 4  // u32 task_struct.exit_state: nonzero for a zombie
	recStart   = 8  // u64 task_struct.start_boottime, ns since boot
	recCgroup  = 16 // u64 cgroup id in the walked hierarchy
	recRun     = 24 // u64 se.sum_exec_runtime, ns
	recWait    = 32 // u64 sched_info.run_delay, ns
	recSlices  = 40 // u64 sched_info.pcount
	recordSize = 48
)

// Stack slots of the program, below the frame pointer.
const (
	stackRecord = -recordSize     // the record being built
	stackPid    = -recordSize - 8 // a struct pid pointer read as a number
)

// programSpec returns the iter/task program for layout l.
func programSpec(l layout) *ebpf.ProgramSpec {
	return &ebpf.ProgramSpec{
		Name:         progName,
		Type:         ebpf.Tracing,
		AttachType:   ebpf.AttachTraceIter,
		AttachTo:     "task",
		License:      license,
		Instructions: program(l),
	}
}

// program returns the iterator's program. The kernel calls it once for
// every task visible in the reader's PID namespace, with ctx a struct
// bpf_iter__task {meta, task}, and once more with a NULL task at the end.
// It copies the task's fields into a record on its stack and appends the
// record to the seq_file with bpf_seq_write. Task fields are read by direct
// loads from the BTF-typed task pointer, which the verifier turns into
// fault-safe loads; pointers on the way to the cgroup id are checked for
// NULL. The id in a non-initial PID namespace sits at an index known only
// at run time, so it is read with bpf_probe_read_kernel.
func program(l layout) asm.Instructions {
	rec := func(off int16) int16 { return stackRecord + off }
	insns := asm.Instructions{
		asm.LoadMem(asm.R6, asm.R1, 0, asm.DWord), // ctx->meta
		asm.LoadMem(asm.R7, asm.R1, 8, asm.DWord), // ctx->task
		asm.JEq.Imm(asm.R7, 0, "out"),
		asm.LoadMem(asm.R6, asm.R6, 0, asm.DWord), // meta->seq

		// The level of the reader's PID namespace:
		// current->thread_pid->level. bpf_get_current_task gives current
		// as a plain number (bpf_get_current_task_btf, which gives a typed
		// pointer, is 5.11+), so both steps are probe reads.
		asm.FnGetCurrentTask.Call(),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Add.Imm(asm.R3, l.threadPid.offset),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, stackPid),
		asm.Mov.Imm(asm.R2, 8),
		asm.FnProbeReadKernel.Call(),
		asm.LoadMem(asm.R3, asm.RFP, stackPid, asm.DWord),
		asm.JEq.Imm(asm.R3, 0, "hostpid"),
		asm.Add.Imm(asm.R3, l.pidLevel.offset),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, stackPid),
		asm.Mov.Imm(asm.R2, int32(l.pidLevel.size)),
		asm.FnProbeReadKernel.Call(),
		kbtf.Load(asm.R9, asm.RFP, stackPid, l.pidLevel.size),
		asm.JEq.Imm(asm.R9, 0, "hostpid"),

		// task->thread_pid->numbers[level].nr
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, stackPid),
		asm.Mov.Imm(asm.R2, 8),
		asm.Mov.Reg(asm.R3, asm.R7),
		asm.Add.Imm(asm.R3, l.threadPid.offset),
		asm.FnProbeReadKernel.Call(),
		asm.LoadMem(asm.R3, asm.RFP, stackPid, asm.DWord),
		asm.Mul.Imm(asm.R9, int32(l.upidSize)),
		asm.Add.Reg(asm.R3, asm.R9),
		asm.Add.Imm(asm.R3, l.numbers.offset+l.upidNr.offset),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, int32(rec(recTID))),
		asm.Mov.Imm(asm.R2, 4),
		asm.FnProbeReadKernel.Call(),
		asm.Ja.Label("fields"),

		load(asm.R1, asm.R7, l.pid).WithSymbol("hostpid"),
		asm.StoreMem(asm.RFP, rec(recTID), asm.R1, asm.Word),
	}
	first := true
	for _, c := range []struct {
		f    field
		to   int16
		size asm.Size
	}{
		{l.exitState, recExit, asm.Word},
		{l.start, recStart, asm.DWord},
		{l.runtime, recRun, asm.DWord},
		{l.delay, recWait, asm.DWord},
		{l.pcount, recSlices, asm.DWord},
	} {
		ld := load(asm.R1, asm.R7, c.f)
		if first {
			ld = ld.WithSymbol("fields")
			first = false
		}
		insns = append(insns, ld, asm.StoreMem(asm.RFP, rec(c.to), asm.R1, c.size))
	}

	// The cgroup id in the walked hierarchy, 0 if a pointer on the way
	// is NULL.
	insns = append(insns, asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.RFP, rec(recCgroup), asm.R1, asm.DWord))
	insns = append(insns, l.cgroup.TaskCgroup(asm.R1, asm.R7, "write")...)
	insns = append(insns, l.cgroup.CgroupID(asm.R1, asm.R1, "write")...)
	insns = append(insns, asm.StoreMem(asm.RFP, rec(recCgroup), asm.R1, asm.DWord))
	return append(insns,
		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("write"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackRecord),
		asm.Mov.Imm(asm.R3, recordSize),
		asm.FnSeqWrite.Call(),

		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
}

// load reads the field f of the struct src points to into dst.
func load(dst, src asm.Register, f field) asm.Instruction {
	return kbtf.Load(dst, src, int16(f.offset), f.size)
}
