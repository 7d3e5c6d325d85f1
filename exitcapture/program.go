package exitcapture

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/kbtf"
)

// Names of the kernel objects, as bpftool and /proc/<pid>/fdinfo show them
// (at most 15 bytes).
const (
	progName = "schedstatd_exit"
	ringName = "schedstatd_ring"
	lostName = "schedstatd_lost"
)

// license is the program's license string. The kernel loads tracing
// programs only under a GPL-compatible one.
const license = "Dual MIT/GPL"

// Offsets in a record, as the program writes it in the ring buffer: native
// byte order, 104 bytes.
const (
	recTID    = 0  // u32 task_struct.pid
	recTGID   = 4  // u32 task_struct.tgid
	recStart  = 8  // u64 task_struct.start_boottime, ns since boot
	recCgroup = 16 // u64 id of the task's cgroup in the walked hierarchy
	recRun    = 24 // u64 se.sum_exec_runtime, ns
	recWait   = 32 // u64 sched_info.run_delay, ns
	recSlices = 40 // u64 sched_info.pcount
	// recAncestors holds the ids of the cgroup's ancestors, nearest
	// first, zero past the root.
	recAncestors = 48
	recordSize   = recAncestors + 8*container.MaxExitAncestors
)

// collectionSpec returns the program and its two maps: the ring buffer of
// records, and a one-slot array that counts records the ring had no room
// for.
func collectionSpec(l layout, ringBytes int) *ebpf.CollectionSpec {
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			ringName: {Name: ringName, Type: ebpf.RingBuf, MaxEntries: uint32(ringBytes)},
			lostName: {Name: lostName, Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1},
		},
		Programs: map[string]*ebpf.ProgramSpec{
			progName: {
				Name:         progName,
				Type:         ebpf.Tracing,
				AttachType:   ebpf.AttachTraceRawTp,
				AttachTo:     l.hook.tracepoint(),
				License:      license,
				Instructions: program(l, uint32(ringBytes/2)),
			},
		},
	}
}

// Flags of bpf_ringbuf_submit and bpf_ringbuf_query.
const (
	rbNoWakeup    = 1 // BPF_RB_NO_WAKEUP
	rbForceWakeup = 2 // BPF_RB_FORCE_WAKEUP
	rbAvailData   = 0 // BPF_RB_AVAIL_DATA
)

// program returns the handler of l.hook. At sched_process_free, which
// fires once per task after its final switch away, it sends the freed
// task's record. At sched_switch, on every switch it loads the previous
// task's state and returns unless TASK_DEAD is set: four instructions. A
// dead task switches away once, after its last update of its counters.
// Either way the record carries the final counters, and the ids of the
// task's cgroup in the walked hierarchy and of its ancestors, so the
// accounting can place a task no pass saw even when its cgroup is gone.
// Task and cgroup fields are read by direct loads from BTF-typed pointers,
// which the verifier turns into fault-safe loads.
//
// A record wakes the reader only once wakeAt bytes wait in the ring: a
// wakeup is an interrupt (a self-IPI, which costs microseconds in a VM),
// and the reader polls on its own anyway.
func program(l layout, wakeAt uint32) asm.Instructions {
	var insns asm.Instructions
	switch {
	case l.hook == HookFree:
		insns = append(insns, asm.LoadMem(asm.R6, asm.R1, int16(8*l.taskArg), asm.DWord).WithSymbol("dead"))
	case l.stateArg >= 0:
		insns = append(insns, asm.LoadMem(asm.R2, asm.R1, int16(8*l.stateArg), asm.DWord))
	default:
		insns = append(insns,
			asm.LoadMem(asm.R2, asm.R1, int16(8*l.prevArg), asm.DWord),
			load(asm.R2, asm.R2, l.state))
	}
	if l.hook != HookFree {
		insns = append(insns,
			asm.JSet.Imm(asm.R2, taskDead, "dead"),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
			asm.LoadMem(asm.R6, asm.R1, int16(8*l.prevArg), asm.DWord).WithSymbol("dead"),
		)
	}
	return append(insns, sendRecord(l, recordSize, wakeAt)...)
}

// sendRecord returns the instructions that send the record of the task R6
// points to, size bytes (recordSize, or more for a record that carries a
// kind after it), and return. A record larger than recordSize has
// recordKind written at offset recordSize.
func sendRecord(l layout, size int32, wakeAt uint32) asm.Instructions {
	var insns asm.Instructions
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, 0).WithReference(ringName),
		asm.Mov.Imm(asm.R2, size),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, "full"),
		asm.Mov.Reg(asm.R8, asm.R0),
	)
	for _, c := range []struct {
		f    field
		to   int16
		size asm.Size
	}{
		{l.pid, recTID, asm.Word},
		{l.tgid, recTGID, asm.Word},
		{l.start, recStart, asm.DWord},
		{l.runtime, recRun, asm.DWord},
		{l.delay, recWait, asm.DWord},
		{l.pcount, recSlices, asm.DWord},
	} {
		insns = append(insns,
			load(asm.R1, asm.R6, c.f),
			asm.StoreMem(asm.R8, c.to, asm.R1, c.size))
	}
	if size > recordSize {
		insns = append(insns, asm.Mov.Imm(asm.R1, recordKindMove), asm.StoreMem(asm.R8, recordSize, asm.R1, asm.DWord))
	}
	// The ids, from the task's cgroup up: the ring's memory is not
	// zeroed, so every slot is cleared first.
	insns = append(insns, asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.R8, recCgroup, asm.R1, asm.DWord))
	for i := range container.MaxExitAncestors {
		insns = append(insns, asm.StoreMem(asm.R8, int16(recAncestors+8*i), asm.R1, asm.DWord))
	}
	insns = append(insns, l.cgroup.TaskCgroup(asm.R7, asm.R6, "ids")...)
	for i := 0; i <= container.MaxExitAncestors; i++ {
		to := int16(recCgroup)
		if i > 0 {
			to = int16(recAncestors + 8*(i-1))
			insns = append(insns, l.cgroup.Parent(asm.R7, asm.R7, "ids")...)
		}
		insns = append(insns, l.cgroup.CgroupID(asm.R1, asm.R7, "ids")...)
		insns = append(insns, asm.StoreMem(asm.R8, to, asm.R1, asm.DWord))
	}
	return append(insns,
		asm.LoadMapPtr(asm.R1, 0).WithReference(ringName).WithSymbol("ids"),
		asm.Mov.Imm(asm.R2, rbAvailData),
		asm.FnRingbufQuery.Call(),
		asm.Mov.Imm(asm.R2, rbNoWakeup),
		asm.JLT.Imm(asm.R0, int32(wakeAt), "submit"),
		asm.Mov.Imm(asm.R2, rbForceWakeup),
		asm.Mov.Reg(asm.R1, asm.R8).WithSymbol("submit"),
		asm.FnRingbufSubmit.Call(),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),

		// The ring is full: count the record as lost.
		asm.StoreImm(asm.RFP, -4, 0, asm.Word).WithSymbol("full"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, 0).WithReference(lostName),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
}

// load reads the field f of the struct src points to into dst.
func load(dst, src asm.Register, f field) asm.Instruction {
	return kbtf.Load(dst, src, f.offset, f.size)
}
