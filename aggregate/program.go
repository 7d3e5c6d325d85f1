package aggregate

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/kbtf"
)

// Names of the kernel objects, as bpftool and /proc/<pid>/fdinfo show them
// (at most 15 bytes).
const (
	iterName     = "schedstatd_agg"
	freeName     = "schedstatd_aggx"
	lastName     = "schedstatd_last"
	totalsName   = "schedstatd_cgtot"
	overflowName = "schedstatd_cgovf"
)

// license is the programs' license string. The kernel loads tracing
// programs only under a GPL-compatible one.
const license = "Dual MIT/GPL"

// A task's storage holds its counters at its last visit: three u64.
const (
	lastRun    = 0
	lastWait   = 8
	lastSlices = 16
	lastSize   = 24
)

// A cgroup's totals, keyed by its id in the walked hierarchy: what its
// tasks ran, waited and were scheduled, added up by the programs; the
// iterator session that last counted its tasks and how many it counted;
// the ids of its ancestors, nearest first, zero past the root, written
// when the entry is made.
const (
	totRun       = 0
	totWait      = 8
	totSlices    = 16
	totSession   = 24
	totTasks     = 32
	totAncestors = 40
	totSize      = totAncestors + 8*container.MaxExitAncestors
)

// Stack slots below the frame pointer.
const (
	stackKey   = -8                   // u64 the cgroup id
	stackDelta = -32                  // three u64: the increase to credit
	stackValue = stackDelta - totSize // a new cgroup entry
)

// Flags of the helpers.
const (
	storageCreate = 1 // BPF_LOCAL_STORAGE_GET_F_CREATE
	noExist       = 1 // BPF_NOEXIST
	noPrealloc    = 1 // BPF_F_NO_PREALLOC
)

// collectionSpec returns the two programs and their maps: the task storage
// of last visits, the per-cgroup totals (at most maxCgroups entries) and a
// one-slot array counting credits that found the totals full. With exits
// false the sched_process_free program is left out.
func collectionSpec(l layout, maxCgroups int, exits bool) *ebpf.CollectionSpec {
	u64 := &btf.Int{Name: "u64", Size: 8}
	spec := &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			lastName: {
				Name: lastName, Type: ebpf.TaskStorage, KeySize: 4, ValueSize: lastSize, Flags: noPrealloc,
				Key: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed},
				Value: &btf.Struct{Name: "schedstatd_last", Size: lastSize, Members: []btf.Member{
					{Name: "run", Type: u64, Offset: 8 * lastRun},
					{Name: "wait", Type: u64, Offset: 8 * lastWait},
					{Name: "slices", Type: u64, Offset: 8 * lastSlices},
				}},
			},
			totalsName:   {Name: totalsName, Type: ebpf.Hash, KeySize: 8, ValueSize: totSize, MaxEntries: uint32(maxCgroups), Flags: noPrealloc},
			overflowName: {Name: overflowName, Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1},
		},
		Programs: map[string]*ebpf.ProgramSpec{
			iterName: {
				Name: iterName, Type: ebpf.Tracing, AttachType: ebpf.AttachTraceIter, AttachTo: "task",
				License: license, Instructions: iterProgram(l),
			},
		},
	}
	if exits {
		spec.Programs[freeName] = &ebpf.ProgramSpec{
			Name: freeName, Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: "sched_process_free",
			License: license, Instructions: freeProgram(l),
		}
	}
	return spec
}

// iterProgram returns the iter/task program. For every live task it reads
// the three counters, swaps them with those its task storage kept from
// the last visit (zero at the first), and adds the increase to the totals
// of the task's cgroup, counting the task there for this session. It emits
// nothing. A task that has exited (exit_state set) is left to the
// sched_process_free program: the iterator runs under rcu_read_lock and
// the task is freed by an RCU callback queued after exit_state was set, so
// a visit that sees exit_state clear ends before that callback starts, and
// the two never credit the same stretch.
func iterProgram(l layout) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R6, asm.R1, l.iterCtxMeta, asm.DWord),
		asm.LoadMem(asm.R7, asm.R1, l.iterCtxTask, asm.DWord),
		asm.JEq.Imm(asm.R7, 0, "out"),
		asm.LoadMem(asm.R8, asm.R6, l.iterMetaSession, asm.DWord),
		load(asm.R1, asm.R7, l.exitState),
		asm.JNE.Imm(asm.R1, 0, "out"),

		asm.LoadMapPtr(asm.R1, 0).WithReference(lastName),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Mov.Imm(asm.R3, 0),
		asm.Mov.Imm(asm.R4, storageCreate),
		asm.FnTaskStorageGet.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"), // no memory, or a nested call: the next visit catches up
		asm.Mov.Reg(asm.R9, asm.R0),
	}
	for i, c := range counters(l) {
		ok := "delta" + string(rune('0'+i))
		insns = append(insns,
			load(asm.R1, asm.R7, c.f),
			asm.LoadMem(asm.R2, asm.R9, c.last, asm.DWord),
			asm.StoreMem(asm.R9, c.last, asm.R1, asm.DWord),
			asm.Sub.Reg(asm.R1, asm.R2),
			asm.JSGE.Imm(asm.R1, 0, ok),
			asm.Mov.Imm(asm.R1, 0),
			asm.StoreMem(asm.RFP, stackDelta+c.last, asm.R1, asm.DWord).WithSymbol(ok),
		)
	}
	return append(insns, credit(l, true)...)
}

// freeProgram returns the sched_process_free program: the task is dead,
// reaped and past its final switch away, so its counters are final. It
// adds their increase over the task storage's last visit (all of them if
// no visit came) to the totals of the task's cgroup.
func freeProgram(l layout) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R7, asm.R1, int16(8*l.freeTaskArg), asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(lastName),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Mov.Imm(asm.R3, 0),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnTaskStorageGet.Call(),
		asm.Mov.Reg(asm.R9, asm.R0),
	}
	for i, c := range counters(l) {
		ok := "delta" + string(rune('0'+i))
		insns = append(insns,
			load(asm.R1, asm.R7, c.f),
			asm.JEq.Imm(asm.R9, 0, ok),
			asm.LoadMem(asm.R2, asm.R9, c.last, asm.DWord),
			asm.Sub.Reg(asm.R1, asm.R2),
			asm.JSGE.Imm(asm.R1, 0, ok),
			asm.Mov.Imm(asm.R1, 0),
			asm.StoreMem(asm.RFP, stackDelta+c.last, asm.R1, asm.DWord).WithSymbol(ok),
		)
	}
	return append(insns, credit(l, false)...)
}

// counter is one of the three counters: where it sits in task_struct and
// in the task storage (and, at the same offset, in the delta on the stack
// and in a cgroup's totals).
type counter struct {
	f    kbtf.Field
	last int16
}

func counters(l layout) [3]counter {
	return [3]counter{{l.runtime, lastRun}, {l.delay, lastWait}, {l.pcount, lastSlices}}
}

// credit returns the instructions that add the delta on the stack to the
// totals of the cgroup of the task in R7, making its entry (with its
// ancestors' ids) if there is none. A cgroup the program cannot name, and
// every credit once the totals are full, go to entry 0, which the source
// makes at load and credits to the root; the latter are counted in the
// overflow array. With countTask, the entry counts the task for the
// session in R8.
func credit(l layout, countTask bool) asm.Instructions {
	var insns asm.Instructions
	insns = append(insns, l.cgroup.TaskCgroup(asm.R6, asm.R7, "overflow")...)
	insns = append(insns, l.cgroup.CgroupID(asm.R1, asm.R6, "overflow")...)
	insns = append(insns,
		asm.StoreMem(asm.RFP, stackKey, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(totalsName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackKey),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, "add"),
		// A new entry: zero counters, the ancestors' ids.
		asm.LoadMem(asm.R1, asm.RFP, stackKey, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "overflow"),
	)
	insns = append(insns, asm.Mov.Imm(asm.R1, 0))
	for off := int16(0); off < totSize; off += 8 {
		insns = append(insns, asm.StoreMem(asm.RFP, stackValue+off, asm.R1, asm.DWord))
	}
	for i := range container.MaxExitAncestors {
		insns = append(insns, l.cgroup.Parent(asm.R6, asm.R6, "insert")...)
		insns = append(insns, l.cgroup.CgroupID(asm.R1, asm.R6, "insert")...)
		insns = append(insns, asm.StoreMem(asm.RFP, stackValue+totAncestors+int16(8*i), asm.R1, asm.DWord))
	}
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, 0).WithReference(totalsName).WithSymbol("insert"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackKey),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, stackValue),
		asm.Mov.Imm(asm.R4, noExist),
		asm.FnMapUpdateElem.Call(),
		// Made here, or by another CPU meanwhile.
		asm.LoadMapPtr(asm.R1, 0).WithReference(totalsName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackKey),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, "add"),

		// The totals are full: count it, and credit entry 0.
		asm.StoreImm(asm.RFP, stackKey, 0, asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackKey),
		asm.LoadMapPtr(asm.R1, 0).WithReference(overflowName),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "overflow"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R1, 0).WithSymbol("overflow"),
		asm.StoreMem(asm.RFP, stackKey, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(totalsName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),

		asm.Mov.Reg(asm.R6, asm.R0).WithSymbol("add"),
	)
	for _, off := range []int16{totRun, totWait, totSlices} {
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.RFP, stackDelta+off, asm.DWord),
			asm.AddAtomic.Mem(asm.R6, asm.R1, asm.DWord, off),
		)
	}
	if countTask {
		// Only the iterator writes these, one task at a time.
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.R6, totSession, asm.DWord),
			asm.LoadMem(asm.R2, asm.R6, totTasks, asm.DWord),
			asm.JEq.Reg(asm.R1, asm.R8, "count"),
			asm.StoreMem(asm.R6, totSession, asm.R8, asm.DWord),
			asm.Mov.Imm(asm.R2, 0),
			asm.Add.Imm(asm.R2, 1).WithSymbol("count"),
			asm.StoreMem(asm.R6, totTasks, asm.R2, asm.DWord),
		)
	}
	return append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
}

// load reads the field f of the struct src points to into dst.
func load(dst, src asm.Register, f kbtf.Field) asm.Instruction {
	return kbtf.Load(dst, src, f.Offset, f.Size)
}
