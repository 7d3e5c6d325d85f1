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
	primeName    = "schedstatd_aggp"
	freeName     = "schedstatd_aggx"
	moveName     = "schedstatd_aggm"
	lastName     = "schedstatd_last"
	runName      = "schedstatd_run"
	totalsName   = "schedstatd_cgtot"
	overflowName = "schedstatd_cgovf"
)

// license is the programs' license string. The kernel loads tracing
// programs only under a GPL-compatible one.
const license = "Dual MIT/GPL"

// A task's storage holds its counters at its last visit, three u64, and
// the id of the cgroup whose totals that visit credited (0 if none yet).
// Each counter moves on by compare-and-exchange only, so that of two
// programs that read a task at once (the iterator and the move program)
// each increase is claimed by one.
const (
	lastRun    = 0
	lastWait   = 8
	lastSlices = 16
	lastCgroup = 24
	lastSize   = 32
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

// The iterator's run: the credits of consecutive tasks that share a
// css_set (threads of one process, mostly), added up before they go to
// their cgroup's totals at once, when a task of another css_set comes or
// the iteration ends. One slot; only the iterator touches it, and one
// iteration runs at a time.
const (
	runCSS     = 0  // u64 the css_set, as a number
	runSession = 8  // u64 the session that filled it
	runID      = 16 // u64 the totals' key it goes to
	runDelta   = 24 // three u64, as totRun, totWait, totSlices
	runTasks   = 48 // u64
	runSize    = 56
)

// Stack slots below the frame pointer.
const (
	stackKey   = -8                   // u64 the cgroup id
	stackDelta = -32                  // three u64: the increase to credit
	stackValue = stackDelta - totSize // a new cgroup entry
	stackStore = stackValue - 8       // the task's storage, while R9 holds the run slot
)

// Slots of the counter array.
const (
	countOverflows = 0
	countExits     = 1
)

// Flags of the helpers.
const (
	storageCreate = 1 // BPF_LOCAL_STORAGE_GET_F_CREATE
	noExist       = 1 // BPF_NOEXIST
	noPrealloc    = 1 // BPF_F_NO_PREALLOC
)

// collectionSpec returns the programs and their maps: the task storage
// of last visits, the per-cgroup totals (at most maxCgroups entries) and a
// two-slot array counting credits that found the totals full (slot 0) and
// tasks freed (slot 1). With exits false the sched_process_free program is
// left out, with moves false the cgroup_attach_task one.
func collectionSpec(l layout, maxCgroups int, exits, moves bool) *ebpf.CollectionSpec {
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
					{Name: "cgroup", Type: u64, Offset: 8 * lastCgroup},
				}},
			},
			totalsName:   {Name: totalsName, Type: ebpf.Hash, KeySize: 8, ValueSize: totSize, MaxEntries: uint32(maxCgroups), Flags: noPrealloc},
			overflowName: {Name: overflowName, Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 2},
			runName:      {Name: runName, Type: ebpf.Array, KeySize: 4, ValueSize: runSize, MaxEntries: 1},
		},
		Programs: map[string]*ebpf.ProgramSpec{
			iterName: {
				Name: iterName, Type: ebpf.Tracing, AttachType: ebpf.AttachTraceIter, AttachTo: "task",
				License: license, Instructions: iterProgram(l, false, moves),
			},
			primeName: {
				Name: primeName, Type: ebpf.Tracing, AttachType: ebpf.AttachTraceIter, AttachTo: "task",
				License: license, Instructions: iterProgram(l, true, moves),
			},
		},
	}
	if exits {
		spec.Programs[freeName] = &ebpf.ProgramSpec{
			Name: freeName, Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: "sched_process_free",
			License: license, Instructions: freeProgram(l),
		}
	}
	if moves {
		spec.Programs[moveName] = &ebpf.ProgramSpec{
			Name: moveName, Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: kbtf.AttachTracepoint,
			License: license, Instructions: moveProgram(l),
		}
	}
	return spec
}

// iterProgram returns the iter/task program. For every live task it reads
// the three counters, swaps them with those its task storage kept from
// the last visit (zero at the first), and adds the increase to the totals
// of the task's cgroup, counting the task there for this session; tasks
// that share the previous task's css_set are added up in the run slot
// first, which goes to the totals when another css_set comes and at the
// end (the call with no task). It emits nothing. A task that has exited
// (exit_state set) is left to the sched_process_free program: the
// iterator runs under rcu_read_lock and the task is freed by an RCU
// callback queued after exit_state was set, so a visit that sees
// exit_state clear ends before that callback starts, and the two never
// credit the same stretch.
//
// With prime, it credits no increase: it only sets each task's storage to
// its counters now (and counts the tasks), for a daemon restored from a
// state that has counted the tasks' time so far already. With claims it
// moves the storage's counters on by compare-and-exchange (see claim), for
// the move program, which reads tasks too; without, plainly, which needs
// no BPF atomics (Linux 5.12).
func iterProgram(l layout, prime, claims bool) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R6, asm.R1, l.iterCtxMeta, asm.DWord),
		asm.LoadMem(asm.R7, asm.R1, l.iterCtxTask, asm.DWord),
		asm.LoadMem(asm.R8, asm.R6, l.iterMetaSession, asm.DWord),
		asm.JEq.Imm(asm.R7, 0, "end"),
		load(asm.R1, asm.R7, l.exitState),
		asm.JNE.Imm(asm.R1, 0, "out"),

		asm.LoadMapPtr(asm.R1, 0).WithReference(lastName),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Mov.Imm(asm.R3, 0),
		asm.Mov.Imm(asm.R4, storageCreate),
		asm.FnTaskStorageGet.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"), // no memory, or a nested call: the next visit catches up
		asm.Mov.Reg(asm.R9, asm.R0),
		asm.StoreMem(asm.RFP, stackStore, asm.R9, asm.DWord),
	}
	for i, c := range counters(l) {
		if claims {
			insns = append(insns, claim(c, "claim"+string(rune('0'+i)))...)
		} else {
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
		if prime {
			insns = append(insns, asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.RFP, stackDelta+c.last, asm.R1, asm.DWord))
		}
	}
	insns = append(insns, runSlot("direct")...)
	// Same css_set and session as the run: add to it.
	insns = append(insns,
		asm.Mov.Reg(asm.R9, asm.R0),
		asm.LoadMem(asm.R2, asm.R9, runCSS, asm.DWord),
		l.cgroup.TaskCSSSet(asm.R1, asm.R7),
		asm.JNE.Reg(asm.R1, asm.R2, "change"),
		asm.LoadMem(asm.R2, asm.R9, runSession, asm.DWord),
		asm.JNE.Reg(asm.R2, asm.R8, "change"),
	)
	for _, off := range []int16{totRun, totWait, totSlices} {
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.RFP, stackDelta+off, asm.DWord),
			asm.LoadMem(asm.R2, asm.R9, runDelta+off, asm.DWord),
			asm.Add.Reg(asm.R2, asm.R1),
			asm.StoreMem(asm.R9, runDelta+off, asm.R2, asm.DWord),
		)
	}
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.R9, runTasks, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R9, runTasks, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R9, runID, asm.DWord),
	)
	insns = append(insns, noteCgroup()...)
	insns = append(insns, asm.Ja.Label("out"))
	// Another css_set: the run goes to its totals, and this task starts
	// the next one, credited directly (which makes its cgroup's entry).
	insns = append(insns, flush("change")...)
	insns = append(insns,
		l.cgroup.TaskCSSSet(asm.R1, asm.R7),
		asm.StoreMem(asm.R9, runCSS, asm.R1, asm.DWord),
		asm.StoreMem(asm.R9, runSession, asm.R8, asm.DWord),
	)
	insns = append(insns, credit(l, true, "start")...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.RFP, stackKey, asm.DWord),
		asm.StoreMem(asm.R9, runID, asm.R1, asm.DWord),
	)
	insns = append(insns, noteCgroup()...)
	insns = append(insns, asm.Ja.Label("out"))
	// No run slot (an array's slot is always there): credit directly.
	insns = append(insns, credit(l, true, "direct")...)
	insns = append(insns, asm.LoadMem(asm.R1, asm.RFP, stackKey, asm.DWord))
	insns = append(insns, noteCgroup()...)
	insns = append(insns, asm.Ja.Label("out"))
	// The end of the iteration: the last run goes to its totals.
	insns = append(insns, runSlot("out").WithSymbol("end")...)
	insns = append(insns, asm.Mov.Reg(asm.R9, asm.R0))
	insns = append(insns, flush("flush")...)
	insns = append(insns, asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.R9, runCSS, asm.R1, asm.DWord))
	return append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
}

// WithSymbol names the first instruction of insns.
type symbolic asm.Instructions

func (s symbolic) WithSymbol(name string) asm.Instructions {
	s[0] = s[0].WithSymbol(name)
	return asm.Instructions(s)
}

// runSlot returns the instructions that look the run slot up into R0,
// jumping to miss if it is missing (it never is: an array's slot).
func runSlot(miss string) symbolic {
	return symbolic{
		asm.StoreImm(asm.RFP, stackKey, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(runName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, miss),
	}
}

// flush returns the instructions, starting at label name, that add the run
// in R9 to the totals its key names (entry 0 if that entry is gone) and
// empty it. A run of an older session, left by an iteration that did not
// end, adds its counters but not its tasks.
func flush(name string) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R1, asm.R9, runCSS, asm.DWord).WithSymbol(name),
		asm.JEq.Imm(asm.R1, 0, name+"_done"),
		asm.LoadMem(asm.R1, asm.R9, runID, asm.DWord),
		asm.StoreMem(asm.RFP, stackKey, asm.R1, asm.DWord),
	}
	insns = append(insns, keyed(name, name+"_done")...)
	for _, off := range []int16{totRun, totWait, totSlices} {
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.R9, runDelta+off, asm.DWord),
			asm.AddAtomic.Mem(asm.R6, asm.R1, asm.DWord, off),
		)
	}
	insns = append(insns,
		asm.LoadMem(asm.R3, asm.R9, runSession, asm.DWord),
		asm.JNE.Reg(asm.R3, asm.R8, name+"_done"),
		asm.LoadMem(asm.R1, asm.R6, totSession, asm.DWord),
		asm.LoadMem(asm.R2, asm.R6, totTasks, asm.DWord),
		asm.JEq.Reg(asm.R1, asm.R8, name+"_count"),
		asm.StoreMem(asm.R6, totSession, asm.R8, asm.DWord),
		asm.Mov.Imm(asm.R2, 0),
		asm.LoadMem(asm.R1, asm.R9, runTasks, asm.DWord).WithSymbol(name+"_count"),
		asm.Add.Reg(asm.R2, asm.R1),
		asm.StoreMem(asm.R6, totTasks, asm.R2, asm.DWord),
		asm.Mov.Imm(asm.R1, 0).WithSymbol(name+"_done"),
	)
	for off := int16(runDelta); off < runSize; off += 8 {
		insns = append(insns, asm.StoreMem(asm.R9, off, asm.R1, asm.DWord))
	}
	return insns
}

// storageOfArg returns the instructions that load the task in slot arg of
// a tracepoint's context into R7 and look its storage up (not made) into
// R0, NULL if it has none.
func storageOfArg(arg int) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R7, asm.R1, int16(8*arg), asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(lastName),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Mov.Imm(asm.R3, 0),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnTaskStorageGet.Call(),
	}
}

// freeProgram returns the sched_process_free program: the task is dead,
// reaped and past its final switch away, so its counters are final. It
// adds their increase over the task storage's last visit (all of them if
// no visit came) to the totals of the task's cgroup.
func freeProgram(l layout) asm.Instructions {
	insns := append(storageOfArg(l.freeTaskArg), asm.Mov.Reg(asm.R9, asm.R0))
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
	insns = append(insns, credit(l, false, "credit")...)
	insns = append(insns,
		asm.StoreImm(asm.RFP, stackKey, countExits, asm.Word).WithSymbol("count_exit"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackKey),
		asm.LoadMapPtr(asm.R1, 0).WithReference(overflowName),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
	)
	return append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
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

// claim returns the instructions, starting at label name, that claim the
// increase of counter c of the task in R7 over its storage in R9: they
// read the counter, move the storage's copy from the value it had to it
// by compare-and-exchange, and leave the increase on the stack, zero if
// there is none or another program moved the copy first (that program
// then claimed the increase up to its own read, and the next visit the
// rest).
func claim(c counter, name string) asm.Instructions {
	return asm.Instructions{
		load(asm.R1, asm.R7, c.f).WithSymbol(name),
		asm.LoadMem(asm.R0, asm.R9, c.last, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R0),
		asm.JGE.Reg(asm.R0, asm.R1, name+"_none"),
		kbtf.Atomic(asm.CmpXchg, asm.R9, asm.R1, asm.DWord, c.last),
		asm.JNE.Reg(asm.R0, asm.R2, name+"_none"),
		asm.Sub.Reg(asm.R1, asm.R2),
		asm.Ja.Label(name + "_store"),
		asm.Mov.Imm(asm.R1, 0).WithSymbol(name + "_none"),
		asm.StoreMem(asm.RFP, stackDelta+c.last, asm.R1, asm.DWord).WithSymbol(name + "_store"),
	}
}

// noteCgroup returns the instructions that write the cgroup id in R1 into
// the task's storage, whose pointer is at stackStore: where the move
// program credits what the task does until it is moved.
func noteCgroup() asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.RFP, stackStore, asm.DWord),
		asm.StoreMem(asm.R2, lastCgroup, asm.R1, asm.DWord),
	}
}

// moveProgram returns the cgroup_attach_task program. When the task it
// was given (the leader of a process moved whole) now has another cgroup
// in the walked hierarchy than the one its storage names, it claims the
// task's increase since the last visit and credits it to that one, the
// cgroup the task ran in until the move, and names the new cgroup for
// the next credit. A task no visit has seen yet, or one whose move was in
// another v1 hierarchy, is left to the iterator.
func moveProgram(l layout) asm.Instructions {
	insns := storageOfArg(l.moveTaskArg)
	insns = append(insns,
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Reg(asm.R9, asm.R0),
		asm.StoreMem(asm.RFP, stackStore, asm.R9, asm.DWord),
	)
	insns = append(insns, l.cgroup.TaskCgroup(asm.R6, asm.R7, "out")...)
	insns = append(insns, l.cgroup.CgroupID(asm.R1, asm.R6, "out")...)
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.R9, lastCgroup, asm.DWord),
		asm.JEq.Imm(asm.R2, 0, "out"),
		asm.JEq.Reg(asm.R1, asm.R2, "out"),
		asm.StoreMem(asm.RFP, stackKey, asm.R2, asm.DWord),
	)
	insns = append(insns, noteCgroup()...)
	for i, c := range counters(l) {
		insns = append(insns, claim(c, "claim"+string(rune('0'+i)))...)
	}
	insns = append(insns, creditKey("moved")...)
	// The new cgroup's totals are made now if they are not there: the
	// task may move on before a visit makes them, and its increase until
	// then is credited to them by key.
	insns = append(insns, entry(l, "dest")...)
	return append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
}

// keyed returns the instructions that leave in R6 the totals of the
// cgroup id at stackKey, or of entry 0 (and 0 at stackKey) if that entry
// is gone; they jump to miss if not even entry 0 is there. Their last
// instruction is labelled name+"_add".
func keyed(name, miss string) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, 0).WithReference(totalsName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackKey),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, name+"_add"),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, stackKey, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(totalsName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, miss),
		asm.Mov.Reg(asm.R6, asm.R0).WithSymbol(name + "_add"),
	}
}

// creditKey returns the instructions, starting at label name, that add
// the delta on the stack to the totals of the cgroup id at stackKey,
// entry 0 if that entry is gone; they fall through when done and jump to
// "out" if not even entry 0 is there.
func creditKey(name string) asm.Instructions {
	insns := keyed(name, "out")
	insns[0] = insns[0].WithSymbol(name)
	for _, off := range []int16{totRun, totWait, totSlices} {
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.RFP, stackDelta+off, asm.DWord),
			asm.AddAtomic.Mem(asm.R6, asm.R1, asm.DWord, off),
		)
	}
	return insns
}

// credit returns the instructions, starting at label name, that add the
// delta on the stack to the totals of the cgroup of the task in R7, making its entry (with its
// ancestors' ids) if there is none. A cgroup the program cannot name, and
// every credit once the totals are full, go to entry 0, which the source
// makes at load and credits to the root; the latter are counted in the
// overflow array. With countTask, the entry counts the task for the
// session in R8. The key used is left on the stack; the code falls through
// when done, and jumps to "out" if not even entry 0 is there.
func credit(l layout, countTask bool, name string) asm.Instructions {
	insns := entry(l, name)
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
			asm.JEq.Reg(asm.R1, asm.R8, name+"_count"),
			asm.StoreMem(asm.R6, totSession, asm.R8, asm.DWord),
			asm.Mov.Imm(asm.R2, 0),
			asm.Add.Imm(asm.R2, 1).WithSymbol(name+"_count"),
			asm.StoreMem(asm.R6, totTasks, asm.R2, asm.DWord),
		)
	}
	return insns
}

// entry returns the instructions, starting at label name, that leave in
// R6 the totals of the cgroup of the task in R7, made (with its
// ancestors' ids) if there is none: entry 0 for a cgroup the program
// cannot name, and once the totals are full (counted in the overflow
// array). The key used is left on the stack; they jump to "out" if not
// even entry 0 is there.
func entry(l layout, name string) asm.Instructions {
	insns := asm.Instructions{asm.Mov.Imm(asm.R1, 0).WithSymbol(name)}
	insns = append(insns, l.cgroup.TaskCgroup(asm.R6, asm.R7, name+"_overflow")...)
	insns = append(insns, l.cgroup.CgroupID(asm.R1, asm.R6, name+"_overflow")...)
	insns = append(insns,
		asm.StoreMem(asm.RFP, stackKey, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(totalsName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackKey),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, name+"_add"),
		// A new entry: zero counters, the ancestors' ids.
		asm.LoadMem(asm.R1, asm.RFP, stackKey, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, name+"_overflow"),
	)
	insns = append(insns, asm.Mov.Imm(asm.R1, 0))
	for off := int16(0); off < totSize; off += 8 {
		insns = append(insns, asm.StoreMem(asm.RFP, stackValue+off, asm.R1, asm.DWord))
	}
	for i := range container.MaxExitAncestors {
		insns = append(insns, l.cgroup.Parent(asm.R6, asm.R6, name+"_insert")...)
		insns = append(insns, l.cgroup.CgroupID(asm.R1, asm.R6, name+"_insert")...)
		insns = append(insns, asm.StoreMem(asm.RFP, stackValue+totAncestors+int16(8*i), asm.R1, asm.DWord))
	}
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, 0).WithReference(totalsName).WithSymbol(name+"_insert"),
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
		asm.JNE.Imm(asm.R0, 0, name+"_add"),

		// The totals are full: count it, and credit entry 0.
		asm.StoreImm(asm.RFP, stackKey, 0, asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackKey),
		asm.LoadMapPtr(asm.R1, 0).WithReference(overflowName),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, name+"_overflow"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R1, 0).WithSymbol(name+"_overflow"),
		asm.StoreMem(asm.RFP, stackKey, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(totalsName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stackKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),

		asm.Mov.Reg(asm.R6, asm.R0).WithSymbol(name+"_add"),
	)
	return insns
}

// load reads the field f of the struct src points to into dst.
func load(dst, src asm.Register, f kbtf.Field) asm.Instruction {
	return kbtf.Load(dst, src, f.Offset, f.Size)
}
