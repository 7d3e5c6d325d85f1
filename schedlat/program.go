package schedlat

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/schedstatd/schedstatd/internal/kbtf"
)

// Names of the kernel objects, as bpftool and /proc/<pid>/fdinfo show them
// (at most 15 bytes).
const (
	progName  = "schedstatd_lat"
	flushName = "schedlat_flush"
	tasksName = "schedlat_tasks"
	statsName = "schedlat_stats"
	zeroName  = "schedlat_zero"
	pairsName = "schedlat_pairs"
	lostName  = "schedlat_lost"
)

// license is the program's license string. The kernel loads tracing
// programs only under a GPL-compatible one.
const license = "Dual MIT/GPL"

// Slots of a cgroup's value in the per-CPU stats map, u64 each, native
// byte order: the histogram, then the preemption counts.
const (
	slotCount   = 0 // waits (timeslices) counted
	slotSum     = 1 // their total, ns
	slotBuckets = 2 // Buckets counters, the zero bucket first
	slotSame    = slotBuckets + Buckets
	slotOther   = slotSame + 1
	slotKernel  = slotSame + 2
	slotIdle    = slotSame + 3
	slotCaused  = slotSame + 4
	valueSlots  = slotCaused + 1
)

// Slots of the lost counters, a per-CPU array of u64.
const (
	lostStats = iota // a cgroup found no room in the stats map
	lostPairs        // a pair found no room in the pair map
	lostTasks        // the kernel gave no task storage
	lostSlots
)

// Offsets in a task's storage: its run_delay and pcount at its last
// switch away, whether it has been seen, then its buffer (see fast): the
// lock, the cgroup id the buffer counts for, the sum of its waits and
// what of it was flushed (u64 each), the buffered counters and what of
// them was flushed (u32 each, bufSlots of them).
const (
	taskDelay  = 0
	taskSlice  = 8
	taskSeen   = 16
	taskLock   = 24
	taskCgroup = 32
	taskSum    = 40
	taskSumOut = 48
	taskBuf    = 56
	taskOut    = taskBuf + 4*bufSlots
	taskSize   = taskOut + 4*bufSlots
)

// bufSlots are the counters a task buffers: the count, the buckets and
// the four preemption counts, the stats slots but the sum (a u64 of its
// own) and caused (counted in the preemptor's cgroup, directly).
const bufSlots = valueSlots - 2

// bufIndex returns the index in a task's buffer of the stats slot.
func bufIndex(slot int) int {
	if slot == slotCount {
		return 0
	}
	return slot - 1
}

// Stack slots of the program, below the frame pointer.
const (
	stackKey      = -8  // u64 stats map key (a cgroup id)
	stackPair     = -24 // {victim, preemptor u64} pair map key
	stackOne      = -32 // u64 1, the value of a new pair
	stackLostSlot = -36 // u32 lost counter index, also the zero map's key
)

// Map update flags.
const (
	bpfNoExist   = 1 // BPF_NOEXIST
	storageCreat = 1 // BPF_LOCAL_STORAGE_GET_F_CREATE
)

// progFeatures are what the program does.
type progFeatures struct {
	latency, preemption bool
	// bornAfter is the boot time (ns) at load: a task started at or after
	// it counts from its start; an older one from its first switch away
	// seen.
	bornAfter uint64
	// maxCgroups and maxPairs size the stats and pair maps.
	maxCgroups, maxPairs uint32
	// direct makes the program count every switch in the stats map, with
	// no buffer in the task's storage and no flush program: the slow
	// path alone, for tests and the benchmark.
	direct bool
}

// collectionSpec returns the program and its maps.
func collectionSpec(l layout, f progFeatures) *ebpf.CollectionSpec {
	u64 := &btf.Int{Name: "u64", Size: 8}
	u32 := &btf.Int{Name: "u32", Size: 4}
	counters := &btf.Array{Index: u32, Type: u32, Nelems: bufSlots}
	task := &btf.Struct{Name: "schedlat_task", Size: taskSize, Members: []btf.Member{
		{Name: "delay", Type: u64, Offset: 8 * taskDelay},
		{Name: "slices", Type: u64, Offset: 8 * taskSlice},
		{Name: "seen", Type: u64, Offset: 8 * taskSeen},
		{Name: "lock", Type: u64, Offset: 8 * taskLock},
		{Name: "cgroup", Type: u64, Offset: 8 * taskCgroup},
		{Name: "sum", Type: u64, Offset: 8 * taskSum},
		{Name: "sum_out", Type: u64, Offset: 8 * taskSumOut},
		{Name: "buf", Type: counters, Offset: 8 * taskBuf},
		{Name: "out", Type: counters, Offset: 8 * taskOut},
	}}
	maps := map[string]*ebpf.MapSpec{
		statsName: {Name: statsName, Type: ebpf.PerCPUHash, KeySize: 8, ValueSize: 8 * valueSlots,
			MaxEntries: f.maxCgroups, Flags: bpfFNoPrealloc},
		zeroName: {Name: zeroName, Type: ebpf.Array, KeySize: 4, ValueSize: 8 * valueSlots, MaxEntries: 1},
		lostName: {Name: lostName, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: lostSlots},
	}
	if f.latency || !f.direct {
		maps[tasksName] = &ebpf.MapSpec{Name: tasksName, Type: ebpf.TaskStorage, KeySize: 4, ValueSize: taskSize,
			Flags: bpfFNoPrealloc, Key: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}, Value: task}
	}
	if f.preemption {
		maps[pairsName] = &ebpf.MapSpec{Name: pairsName, Type: ebpf.Hash, KeySize: 16, ValueSize: 8,
			MaxEntries: f.maxPairs, Flags: bpfFNoPrealloc}
	}
	progs := map[string]*ebpf.ProgramSpec{
		progName: {
			Name:         progName,
			Type:         ebpf.Tracing,
			AttachType:   ebpf.AttachTraceRawTp,
			AttachTo:     "sched_switch",
			License:      license,
			Instructions: program(l, f),
		},
	}
	if !f.direct {
		progs[flushName] = &ebpf.ProgramSpec{
			Name:         flushName,
			Type:         ebpf.Tracing,
			AttachType:   ebpf.AttachTraceIter,
			AttachTo:     "task",
			License:      license,
			Instructions: flushProgram(),
		}
	}
	return &ebpf.CollectionSpec{Maps: maps, Programs: progs}
}

// bpfFNoPrealloc is BPF_F_NO_PREALLOC: a cgroup's entry is allocated when
// it first switches, not for every possible cgroup at load.
const bpfFNoPrealloc = 1

// Registers the program keeps across helper calls.
const (
	rCtx   = asm.R6 // the tracepoint's context
	rPrev  = asm.R7 // the task switched away
	rID    = asm.R8 // prev's cgroup id, once known
	rValue = asm.R9 // prev's cgroup's stats (this CPU's), once known; 0 before
)

// program returns the sched_switch handler.
//
// Unless f.direct, it takes the fast path (see fast) first, which counts
// in the task's own storage and falls back to the slow path below for
// what it cannot buffer.
//
// The slow path, with latency on, takes the previous task's storage and,
// if the task ran a timeslice since its last switch away
// (sched_info.pcount grew), the growth of its sched_info.run_delay since
// then is the wait that ended at the start of that timeslice: it is
// counted in the bucket of its length, in the stats of the task's cgroup
// in the walked hierarchy. Several timeslices at once (a switch the
// program missed) count as that many waits of their mean length, so sum
// and count stay exact.
//
// With preemption on, a switch away from a task still runnable (preempted,
// or prev_state TASK_RUNNING) counts in its cgroup's stats by who runs
// next: the idle task, a kernel thread, a task of the same cgroup or of
// another; for another cgroup, the pair (victim, preemptor) counts in the
// pair map and the preemptor's cgroup counts one caused.
//
// Task and cgroup fields are read by direct loads from BTF-typed
// pointers, which the verifier turns into fault-safe loads.
func program(l layout, f progFeatures) asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Reg(rCtx, asm.R1),
		asm.LoadMem(rPrev, rCtx, int16(8*l.prevArg), asm.DWord),
		// The idle task (pid 0) neither waits nor is preempted: on a
		// node with idle CPUs it is every other switch away.
		load(asm.R1, rPrev, l.pid),
		asm.JEq.Imm(asm.R1, 0, "exit"),
		asm.Mov.Imm(rValue, 0),
	}
	if !f.direct {
		insns = append(insns, fast(l, f)...)
		insns = append(insns, asm.Mov.Imm(rValue, 0).WithSymbol("slow"))
	}
	if f.latency {
		insns = append(insns, latency(l, f)...)
	}
	if f.preemption {
		pre := preemption(l)
		pre[0] = pre[0].WithSymbol("slow_pre")
		insns = append(insns, pre...)
	}
	return append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
}

// latency returns the wait's part of the program; it jumps to or falls
// through to "latency_done".
func latency(l layout, f progFeatures) asm.Instructions {
	const done = "latency_done"
	insns := asm.Instructions{
		asm.LoadMapPtr(asm.R1, 0).WithReference(tasksName),
		asm.Mov.Reg(asm.R2, rPrev),
		asm.Mov.Imm(asm.R3, 0),
		asm.Mov.Imm(asm.R4, storageCreat),
		asm.FnTaskStorageGet.Call(),
		asm.JNE.Imm(asm.R0, 0, "task"),
	}
	insns = append(insns, countLost(lostTasks, "task_lost")...)
	insns = append(insns,
		asm.Ja.Label(done),

		// r1 = pcount now, r2 = pcount then.
		load(asm.R1, rPrev, l.pcount).WithSymbol("task"),
		asm.LoadMem(asm.R2, asm.R0, taskSlice, asm.DWord),
		asm.JEq.Reg(asm.R1, asm.R2, done),
		// r3 = run_delay now, r4 = run_delay then.
		load(asm.R3, rPrev, l.delay),
		asm.LoadMem(asm.R4, asm.R0, taskDelay, asm.DWord),
		asm.StoreMem(asm.R0, taskSlice, asm.R1, asm.DWord),
		asm.StoreMem(asm.R0, taskDelay, asm.R3, asm.DWord),
		asm.LoadMem(asm.R5, asm.R0, taskSeen, asm.DWord),
		asm.JNE.Imm(asm.R5, 0, "credit"),
		// First sight: a task born since the program loaded counts from
		// its start; an older one from now.
		asm.Mov.Imm(asm.R5, 1),
		asm.StoreMem(asm.R0, taskSeen, asm.R5, asm.DWord),
		load(asm.R5, rPrev, l.start),
		asm.LoadImm(asm.R0, int64(f.bornAfter), asm.DWord),
		asm.JLT.Reg(asm.R5, asm.R0, done),
		asm.Mov.Imm(asm.R2, 0),
		asm.Mov.Imm(asm.R4, 0),

		// Keep the timeslices and the wait across the calls below, on
		// the stack: R8 and R9 are for the cgroup.
		asm.Sub.Reg(asm.R1, asm.R2).WithSymbol("credit"),
		asm.Sub.Reg(asm.R3, asm.R4),
		asm.StoreMem(asm.RFP, stackPair, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, stackPair+8, asm.R3, asm.DWord),
	)
	insns = append(insns, prevStats(l, "lat", done)...)
	insns = append(insns, asm.LoadMem(asm.R1, asm.RFP, stackPair, asm.DWord),
		asm.LoadMem(asm.R3, asm.RFP, stackPair+8, asm.DWord))
	insns = append(insns, addSlot(rValue, slotCount, asm.R1)...)
	insns = append(insns, addSlot(rValue, slotSum, asm.R3)...)
	insns = append(insns,
		asm.JEq.Imm(asm.R1, 1, "bucket"),
		asm.Div.Reg(asm.R3, asm.R1),
	)
	// r3 is the wait of one timeslice: find its bucket by binary search
	// over the thresholds, and add the timeslices there.
	insns = append(insns, search(0, len(thresholds), "b", "bucket", done, func(b int) asm.Instructions {
		return addSlot(rValue, slotBuckets+b, asm.R1)
	})...)
	return append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol(done))
}

// preemption returns the preemption's part of the program; it jumps to
// "exit" when done.
func preemption(l layout) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R1, rCtx, int16(8*l.preemptArg), asm.DWord),
		asm.And.Imm(asm.R1, 0xff),
		asm.JNE.Imm(asm.R1, 0, "preempted"),
	}
	if l.stateArg >= 0 {
		insns = append(insns, asm.LoadMem(asm.R1, rCtx, int16(8*l.stateArg), asm.DWord))
	} else {
		insns = append(insns, load(asm.R1, rPrev, l.state))
	}
	insns = append(insns,
		asm.JNE.Imm(asm.R1, 0, "exit"),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("preempted"),
	)
	insns = append(insns, prevStats(l, "pre", "exit")...)
	insns = append(insns,
		// Who runs next: the idle task (pid 0), a kernel thread, or a
		// task of a cgroup.
		asm.LoadMem(asm.R2, rCtx, int16(8*l.nextArg), asm.DWord),
		load(asm.R1, asm.R2, l.pid),
		asm.JNE.Imm(asm.R1, 0, "not_idle"),
	)
	insns = append(insns, addOne(rValue, slotIdle)...)
	insns = append(insns,
		asm.Ja.Label("exit"),
		load(asm.R1, asm.R2, l.flags).WithSymbol("not_idle"),
		asm.JSet.Imm(asm.R1, pfKthread, "kthread"),
	)
	insns = append(insns, l.cgroup.TaskCgroup(asm.R1, asm.R2, "unnamed")...)
	insns = append(insns, l.cgroup.CgroupID(asm.R1, asm.R1, "unnamed")...)
	insns = append(insns, asm.JNE.Reg(asm.R1, rID, "other"))
	insns = append(insns, addOne(rValue, slotSame)...)
	insns = append(insns, asm.Ja.Label("exit"))
	// A next task whose cgroup cannot be named counts as another's,
	// with no pair.
	insns = append(insns, addOne(rValue, slotOther)...)
	insns[len(insns)-3] = insns[len(insns)-3].WithSymbol("unnamed")
	insns = append(insns, asm.Ja.Label("exit"))
	insns = append(insns, addOne(rValue, slotKernel)...)
	insns[len(insns)-3] = insns[len(insns)-3].WithSymbol("kthread")
	insns = append(insns,
		asm.Mov.Imm(asm.R1, 0),
		asm.Ja.Label("pair"),
	)
	insns = append(insns, addOne(rValue, slotOther)...)
	insns[len(insns)-3] = insns[len(insns)-3].WithSymbol("other")
	insns = append(insns,
		// The pair (victim, preemptor), preemptor 0 for a kernel thread.
		asm.StoreMem(asm.RFP, stackPair, rID, asm.DWord).WithSymbol("pair"),
		asm.StoreMem(asm.RFP, stackPair+8, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(pairsName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackPair),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "new_pair"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Ja.Label("caused"),
		asm.Mov.Imm(asm.R1, 1).WithSymbol("new_pair"),
		asm.StoreMem(asm.RFP, stackOne, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(pairsName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackPair),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, stackOne),
		asm.Mov.Imm(asm.R4, bpfNoExist),
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "caused"),
	)
	insns = append(insns, countLost(lostPairs, "pair_lost")...)
	insns = append(insns,
		// The preemptor's cgroup caused one.
		asm.LoadMem(asm.R1, asm.RFP, stackPair+8, asm.DWord).WithSymbol("caused"),
		asm.JEq.Imm(asm.R1, 0, "exit"),
	)
	insns = append(insns, stats(asm.R1, "next", "exit")...)
	insns = append(insns, addOne(asm.R0, slotCaused)...)
	return insns
}

// search returns the binary search for the bucket of the wait in R3 among
// buckets [lo, hi]; its first instruction carries symbol, and each leaf
// runs add(bucket) and jumps to done. Labels start with prefix.
func search(lo, hi int, prefix, symbol, done string, add func(int) asm.Instructions) asm.Instructions {
	if lo == hi {
		insns := add(lo)
		insns[0] = insns[0].WithSymbol(symbol)
		return append(insns, asm.Ja.Label(done))
	}
	mid := (lo + hi) / 2
	right := fmt.Sprintf("%s%d_%d", prefix, mid+1, hi)
	var insns asm.Instructions
	if t := thresholds[mid]; t < 1<<31 {
		insns = asm.Instructions{asm.JGT.Imm(asm.R3, int32(t), right).WithSymbol(symbol)}
	} else {
		insns = asm.Instructions{
			asm.LoadImm(asm.R4, int64(t), asm.DWord).WithSymbol(symbol),
			asm.JGT.Reg(asm.R3, asm.R4, right),
		}
	}
	insns = append(insns, search(lo, mid, prefix, fmt.Sprintf("%s%d_%d", prefix, lo, mid), done, add)...)
	return append(insns, search(mid+1, hi, prefix, right, done, add)...)
}

// prevStats returns instructions that make rValue point to this CPU's
// stats of prev's cgroup, and rID hold its id, unless rValue does already;
// they jump to miss when the cgroup cannot be named or has no room.
// Labels start with prefix.
func prevStats(l layout, prefix, miss string) asm.Instructions {
	insns := asm.Instructions{asm.JNE.Imm(rValue, 0, prefix+"_known")}
	insns = append(insns, l.cgroup.TaskCgroup(asm.R1, rPrev, miss)...)
	insns = append(insns, l.cgroup.CgroupID(rID, asm.R1, miss)...)
	insns = append(insns, stats(rID, prefix, miss)...)
	return append(insns,
		asm.Mov.Reg(rValue, asm.R0),
		asm.Mov.Imm(asm.R0, 0).WithSymbol(prefix+"_known"),
	)
}

// stats returns instructions that leave in R0 this CPU's stats of the
// cgroup whose id is in id, making its entry if there is none yet; they
// jump to miss, counting the loss, when the map is full. Labels start
// with prefix.
func stats(id asm.Register, prefix, miss string) asm.Instructions {
	insns := asm.Instructions{
		asm.StoreMem(asm.RFP, stackKey, id, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(statsName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackKey),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, prefix+"_found"),
		// A new cgroup: its entry starts from the zero map's value.
		asm.StoreImm(asm.RFP, stackLostSlot, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(zeroName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackLostSlot),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, miss),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.LoadMapPtr(asm.R1, 0).WithReference(statsName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackKey),
		asm.Mov.Imm(asm.R4, bpfNoExist),
		asm.FnMapUpdateElem.Call(),
		asm.LoadMapPtr(asm.R1, 0).WithReference(statsName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackKey),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, prefix+"_found"),
	}
	insns = append(insns, countLost(lostStats, prefix+"_lost")...)
	return append(insns,
		asm.Ja.Label(miss),
		asm.Mov.Imm(asm.R1, 0).WithSymbol(prefix+"_found"),
	)
}

// countLost returns instructions that add one to the lost counter slot;
// labels start with prefix.
func countLost(slot int32, prefix string) asm.Instructions {
	return asm.Instructions{
		asm.StoreImm(asm.RFP, stackLostSlot, int64(slot), asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(lostName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackLostSlot),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, prefix+"_none"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol(prefix + "_none"),
	}
}

// addSlot returns instructions that add src to slot of the stats value
// dst points to. The value is this CPU's, and the program runs with
// preemption off: no atomic is needed.
func addSlot(dst asm.Register, slot int, src asm.Register) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R5, dst, int16(8*slot), asm.DWord),
		asm.Add.Reg(asm.R5, src),
		asm.StoreMem(dst, int16(8*slot), asm.R5, asm.DWord),
	}
}

// addOne returns instructions that add one to slot of the stats value dst
// points to.
func addOne(dst asm.Register, slot int) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R5, dst, int16(8*slot), asm.DWord),
		asm.Add.Imm(asm.R5, 1),
		asm.StoreMem(dst, int16(8*slot), asm.R5, asm.DWord),
	}
}

// load reads the field f of the struct src points to into dst.
func load(dst, src asm.Register, f kbtf.Field) asm.Instruction {
	return kbtf.Load(dst, src, f.Offset, f.Size)
}
