package schedlat

import (
	"fmt"

	"github.com/cilium/ebpf/asm"
	"github.com/schedstatd/schedstatd/internal/kbtf"
)

// rStore holds the task's storage on the fast path (rValue is the slow
// path's).
const rStore = rValue

// Stack slots of the fast path, below those of the slow path.
const (
	stackLocked = -48 // u64 1 while the program holds the task's lock
	stackNext   = -56 // u64 the preemptor's cgroup id for the pair, 0 for a kernel thread
	stackTail   = -64 // u64 1 when the pair and caused remain to count
)

// taskDead is TASK_DEAD in include/linux/sched.h (since Linux 4.14): the
// state of a task's final switch away.
const taskDead = 0x80

// flushEvery is how many waits a task buffers before the program flushes
// them itself; the flush program flushes every task's buffer before each
// read, so this only bounds the buffer's u32 counters.
const flushEvery = 4096

// fast returns the fast path: it counts a switch in the task's own
// storage, which takes no map lookup by cgroup id, rather than in the
// stats of its cgroup. A task's storage buffers its counts for one
// cgroup, the one it switched away in last: cumulative counters, and
// beside them what of each was flushed, that is, added to the cgroup's
// stats. Only this program writes the counters (a task switches away on
// one CPU at a time); a flush, which adds each counter's growth since the
// last flush to the stats and marks it flushed, runs under the task's
// lock (a compare-and-exchange, never waited for). A flush reads each
// counter once, so a wait counted beside it is flushed the next time:
// nothing is counted twice or lost, and the stats only grow.
//
// The program flushes a task's buffer when it counted flushEvery waits
// since the last flush, when the task moved to another cgroup (before it
// counts the switch, for the new one), and at its final switch away
// (TASK_DEAD), before its storage goes. The flush program (flushProgram)
// flushes every task's buffer before each read of the stats. When the
// lock is held by a flush elsewhere where this program needs it, or the
// task has no storage, the switch is counted by the slow path.
func fast(l layout, f progFeatures) asm.Instructions {
	var insns asm.Instructions
	if !f.latency {
		insns = append(insns, preempted(l, "f_first", "exit")...)
	}
	insns = append(insns,
		asm.Mov.Imm(asm.R5, 0),
		asm.StoreMem(asm.RFP, stackLocked, asm.R5, asm.DWord),
		asm.Mov.Imm(asm.R5, 0),
		asm.StoreMem(asm.RFP, stackTail, asm.R5, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(tasksName),
		asm.Mov.Reg(asm.R2, rPrev),
		asm.Mov.Imm(asm.R3, 0),
		asm.Mov.Imm(asm.R4, storageCreat),
		asm.FnTaskStorageGet.Call(),
		asm.JNE.Imm(asm.R0, 0, "f_task"),
	)
	// No storage: the preemption is counted by the slow path, the wait
	// at the task's next switch away that finds its storage.
	insns = append(insns, countLost(lostTasks, "f_task_lost")...)
	if f.preemption {
		insns = append(insns, asm.Ja.Label("slow_pre"))
	} else {
		insns = append(insns, asm.Ja.Label("exit"))
	}
	insns = append(insns, asm.Mov.Reg(rStore, asm.R0).WithSymbol("f_task"))
	insns = append(insns, l.cgroup.TaskCgroup(asm.R1, rPrev, "exit")...)
	insns = append(insns, l.cgroup.CgroupID(rID, asm.R1, "exit")...)
	insns = append(insns,
		// Another cgroup than the buffer's (or a new storage), or the
		// final switch away: the lock first.
		asm.LoadMem(asm.R1, rStore, taskCgroup, asm.DWord),
		asm.JNE.Reg(asm.R1, rID, "f_lock"),
		prevState(l),
		asm.JNE.Imm(asm.R1, taskDead, "f_credit"),

		asm.Mov.Imm(asm.R0, 0).WithSymbol("f_lock"),
		asm.Mov.Imm(asm.R1, 1),
		kbtf.Atomic(asm.CmpXchg, rStore, asm.R1, asm.DWord, taskLock),
		asm.JNE.Imm(asm.R0, 0, "f_busy"),
		asm.Mov.Imm(asm.R5, 1),
		asm.StoreMem(asm.RFP, stackLocked, asm.R5, asm.DWord),
		asm.LoadMem(asm.R1, rStore, taskCgroup, asm.DWord),
		asm.JEq.Reg(asm.R1, rID, "f_credit"),
		asm.JEq.Imm(asm.R1, 0, "f_setid"),
	)
	// The buffer's counts go to the cgroup the task left.
	insns = append(insns, flush(false, "f_move", "f_move_miss")...)
	insns = append(insns,
		asm.StoreMem(rStore, taskCgroup, rID, asm.DWord).WithSymbol("f_setid"),
		asm.Ja.Label("f_credit"),
	)
	// The old cgroup found no room: the buffer keeps its counts for it,
	// and this switch goes the slow way.
	insns = append(insns, release("f_move_miss")...)
	insns = append(insns,
		asm.Mov.Imm(rValue, 0).WithSymbol("f_busy"),
		asm.Ja.Label("slow"),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("f_credit"),
	)
	if f.latency {
		insns = append(insns, fastLatency(l, f)...)
	}
	if f.preemption {
		insns = append(insns, fastPreemption(l, f)...)
	}
	insns = append(insns,
		// Under the lock (moved, or dying), flush; otherwise when the
		// buffer holds flushEvery waits, if the lock is free.
		asm.LoadMem(asm.R1, asm.RFP, stackLocked, asm.DWord).WithSymbol("f_end"),
		asm.JNE.Imm(asm.R1, 0, "f_flush"),
		asm.LoadMem(asm.R1, rStore, taskBuf, asm.Word),
		asm.LoadMem(asm.R2, rStore, taskOut, asm.Word),
		asm.Sub.Reg32(asm.R1, asm.R2),
		asm.JLT.Imm(asm.R1, flushEvery, "f_tail"),
		asm.Mov.Imm(asm.R0, 0),
		asm.Mov.Imm(asm.R1, 1),
		kbtf.Atomic(asm.CmpXchg, rStore, asm.R1, asm.DWord, taskLock),
		asm.JNE.Imm(asm.R0, 0, "f_tail"),
	)
	flushed := flush(false, "f_end", "f_release")
	flushed[0] = flushed[0].WithSymbol("f_flush")
	insns = append(insns, flushed...)
	insns = append(insns, release("f_release")...)
	if !f.preemption {
		return append(insns, asm.Ja.Label("exit").WithSymbol("f_tail"))
	}
	// A preemption by another cgroup: the pair and the preemptor's
	// caused, as the slow path counts them.
	return append(insns,
		asm.LoadMem(asm.R1, asm.RFP, stackTail, asm.DWord).WithSymbol("f_tail"),
		asm.JEq.Imm(asm.R1, 0, "exit"),
		asm.LoadMem(asm.R1, asm.RFP, stackNext, asm.DWord),
		asm.Ja.Label("pair"),
	)
}

// fastLatency counts the wait of the timeslice that ended, if one did, in
// the task's buffer; it falls through to what follows.
func fastLatency(l layout, f progFeatures) asm.Instructions {
	const done = "f_lat_done"
	insns := asm.Instructions{
		// r1 = pcount now, r2 = pcount then.
		load(asm.R1, rPrev, l.pcount),
		asm.LoadMem(asm.R2, rStore, taskSlice, asm.DWord),
		asm.JEq.Reg(asm.R1, asm.R2, done),
		// r3 = run_delay now, r4 = run_delay then.
		load(asm.R3, rPrev, l.delay),
		asm.LoadMem(asm.R4, rStore, taskDelay, asm.DWord),
		asm.StoreMem(rStore, taskSlice, asm.R1, asm.DWord),
		asm.StoreMem(rStore, taskDelay, asm.R3, asm.DWord),
		asm.LoadMem(asm.R5, rStore, taskSeen, asm.DWord),
		asm.JNE.Imm(asm.R5, 0, "f_diff"),
		// First sight, as on the slow path.
		asm.Mov.Imm(asm.R5, 1),
		asm.StoreMem(rStore, taskSeen, asm.R5, asm.DWord),
		load(asm.R5, rPrev, l.start),
		asm.LoadImm(asm.R0, int64(f.bornAfter), asm.DWord),
		asm.JLT.Reg(asm.R5, asm.R0, done),
		asm.Mov.Imm(asm.R2, 0),
		asm.Mov.Imm(asm.R4, 0),

		asm.Sub.Reg(asm.R1, asm.R2).WithSymbol("f_diff"),
		asm.Sub.Reg(asm.R3, asm.R4),
	}
	insns = append(insns, addBuf(slotCount, asm.R1)...)
	insns = append(insns,
		asm.LoadMem(asm.R5, rStore, taskSum, asm.DWord),
		asm.Add.Reg(asm.R5, asm.R3),
		asm.StoreMem(rStore, taskSum, asm.R5, asm.DWord),
		asm.JEq.Imm(asm.R1, 1, "f_bucket"),
		asm.Div.Reg(asm.R3, asm.R1),
	)
	insns = append(insns, search(0, len(thresholds), "fb", "f_bucket", done, func(b int) asm.Instructions {
		return addBuf(slotBuckets+b, asm.R1)
	})...)
	return append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol(done))
}

// fastPreemption counts a preemption in the task's buffer by who runs
// next, and for another cgroup or a kernel thread leaves the pair to
// count in stackNext and stackTail; it goes on at "f_end".
func fastPreemption(l layout, f progFeatures) asm.Instructions {
	var insns asm.Instructions
	if f.latency {
		insns = preempted(l, "f_pre", "f_end")
	}
	insns = append(insns,
		asm.LoadMem(asm.R2, rCtx, int16(8*l.nextArg), asm.DWord),
		load(asm.R1, asm.R2, l.pid),
		asm.JNE.Imm(asm.R1, 0, "f_not_idle"),
	)
	insns = append(insns, incBuf(slotIdle)...)
	insns = append(insns,
		asm.Ja.Label("f_end"),
		load(asm.R1, asm.R2, l.flags).WithSymbol("f_not_idle"),
		asm.JSet.Imm(asm.R1, pfKthread, "f_kthread"),
	)
	// The same css_set is the same cgroup in every hierarchy, and saves
	// the walk to the next task's cgroup id.
	insns = append(insns,
		l.cgroup.TaskCSSSet(asm.R1, asm.R2),
		l.cgroup.TaskCSSSet(asm.R3, rPrev),
		asm.JEq.Reg(asm.R1, asm.R3, "f_same"),
	)
	insns = append(insns, l.cgroup.TaskCgroup(asm.R1, asm.R2, "f_unnamed")...)
	insns = append(insns, l.cgroup.CgroupID(asm.R1, asm.R1, "f_unnamed")...)
	insns = append(insns, asm.JNE.Reg(asm.R1, rID, "f_other"))
	same := incBuf(slotSame)
	same[0] = same[0].WithSymbol("f_same")
	insns = append(insns, same...)
	insns = append(insns, asm.Ja.Label("f_end"))
	// A next task whose cgroup cannot be named counts as another's,
	// with no pair.
	unnamed := incBuf(slotOther)
	unnamed[0] = unnamed[0].WithSymbol("f_unnamed")
	insns = append(insns, unnamed...)
	insns = append(insns, asm.Ja.Label("f_end"))
	kthread := incBuf(slotKernel)
	kthread[0] = kthread[0].WithSymbol("f_kthread")
	insns = append(insns, kthread...)
	insns = append(insns,
		asm.Mov.Imm(asm.R5, 0),
		asm.StoreMem(asm.RFP, stackNext, asm.R5, asm.DWord),
		asm.Mov.Imm(asm.R5, 1),
		asm.StoreMem(asm.RFP, stackTail, asm.R5, asm.DWord),
		asm.Ja.Label("f_end"),
	)
	other := incBuf(slotOther)
	other[0] = other[0].WithSymbol("f_other")
	insns = append(insns, other...)
	return append(insns,
		asm.StoreMem(asm.RFP, stackNext, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R5, 1),
		asm.StoreMem(asm.RFP, stackTail, asm.R5, asm.DWord),
	)
}

// preempted returns instructions that jump to no unless the switch is a
// preemption (the preempt argument, or the task still runnable) and
// otherwise fall through; yes labels their end.
func preempted(l layout, yes, no string) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R1, rCtx, int16(8*l.preemptArg), asm.DWord),
		asm.And.Imm(asm.R1, 0xff),
		asm.JNE.Imm(asm.R1, 0, yes),
		prevState(l),
		asm.JNE.Imm(asm.R1, 0, no),
		asm.Mov.Imm(asm.R0, 0).WithSymbol(yes),
	}
}

// prevState returns the instruction that loads prev's state into R1: the
// prev_state argument, or task_struct's state before Linux 5.18.
func prevState(l layout) asm.Instruction {
	if l.stateArg >= 0 {
		return asm.LoadMem(asm.R1, rCtx, int16(8*l.stateArg), asm.DWord)
	}
	return load(asm.R1, rPrev, l.state)
}

// flush returns instructions that, under the task's lock, add what the
// buffer of the task whose storage is in rStore counted since its last
// flush to the stats of the buffer's cgroup, and mark it flushed. They
// jump to miss, flushing nothing, when the cgroup finds no room. atomic
// makes each addition an atomic one, for the flush program, which may be
// preempted on its CPU by the sched_switch program. Labels start with
// prefix.
func flush(atomic bool, prefix, miss string) asm.Instructions {
	insns := asm.Instructions{asm.LoadMem(asm.R1, rStore, taskCgroup, asm.DWord)}
	insns = append(insns, stats(asm.R1, prefix, miss)...)
	add := func(off int16, skip string) asm.Instructions {
		if atomic {
			return asm.Instructions{
				asm.JEq.Imm(asm.R1, 0, skip),
				asm.AddAtomic.Mem(asm.R0, asm.R1, asm.DWord, off),
			}
		}
		return asm.Instructions{
			asm.LoadMem(asm.R3, asm.R0, off, asm.DWord),
			asm.Add.Reg(asm.R3, asm.R1),
			asm.StoreMem(asm.R0, off, asm.R3, asm.DWord),
		}
	}
	skip := func(i int) string { return fmt.Sprintf("%s_s%d", prefix, i) }
	insns = append(insns,
		asm.LoadMem(asm.R1, rStore, taskSum, asm.DWord),
		asm.LoadMem(asm.R2, rStore, taskSumOut, asm.DWord),
		asm.StoreMem(rStore, taskSumOut, asm.R1, asm.DWord),
		asm.Sub.Reg(asm.R1, asm.R2),
	)
	insns = append(insns, add(8*slotSum, skip(0))...)
	for slot := range valueSlots {
		if slot == slotSum || slot == slotCaused {
			continue
		}
		j := int16(bufIndex(slot))
		insns = append(insns,
			asm.LoadMem(asm.R1, rStore, taskBuf+4*j, asm.Word).WithSymbol(skip(int(j))),
			asm.LoadMem(asm.R2, rStore, taskOut+4*j, asm.Word),
			asm.StoreMem(rStore, taskOut+4*j, asm.R1, asm.Word),
			asm.Sub.Reg32(asm.R1, asm.R2),
		)
		insns = append(insns, add(int16(8*slot), skip(int(j)+1))...)
	}
	return append(insns, asm.Mov.Imm(asm.R1, 0).WithSymbol(skip(bufSlots)))
}

// release returns instructions that free the task's lock, the first
// carrying symbol: an exchange, which orders the flush's stores before
// it.
func release(symbol string) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Imm(asm.R1, 0).WithSymbol(symbol),
		kbtf.Atomic(asm.Xchg, rStore, asm.R1, asm.DWord, taskLock),
	}
}

// addBuf returns instructions that add src to the task's buffered
// counter of slot.
func addBuf(slot int, src asm.Register) asm.Instructions {
	off := int16(taskBuf + 4*bufIndex(slot))
	return asm.Instructions{
		asm.LoadMem(asm.R5, rStore, off, asm.Word),
		asm.Add.Reg32(asm.R5, src),
		asm.StoreMem(rStore, off, asm.R5, asm.Word),
	}
}

// incBuf returns instructions that add one to the task's buffered counter
// of slot.
func incBuf(slot int) asm.Instructions {
	off := int16(taskBuf + 4*bufIndex(slot))
	return asm.Instructions{
		asm.LoadMem(asm.R5, rStore, off, asm.Word),
		asm.Add.Imm32(asm.R5, 1),
		asm.StoreMem(rStore, off, asm.R5, asm.Word),
	}
}

// flushProgram returns the task iterator that flushes every task's
// buffer: the kernel calls it for every task, with ctx a struct
// bpf_iter__task {meta, task}, and once more with a NULL task. A task
// whose lock is held is being flushed or counted by the sched_switch
// program on another CPU at that moment, so it is running, not stopped:
// it is skipped, its counts flushed later.
func flushProgram() asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 8, asm.DWord), // ctx->task
		asm.JEq.Imm(asm.R2, 0, "out"),
		asm.LoadMapPtr(asm.R1, 0).WithReference(tasksName),
		asm.Mov.Imm(asm.R3, 0),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnTaskStorageGet.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Reg(rStore, asm.R0),
		asm.LoadMem(asm.R1, rStore, taskCgroup, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "out"),
	}
	// Anything to flush: every count but the sum and the buckets, which
	// only grow with the count.
	for _, slot := range []int{slotCount, slotSame, slotOther, slotKernel, slotIdle} {
		j := int16(bufIndex(slot))
		insns = append(insns,
			asm.LoadMem(asm.R1, rStore, taskBuf+4*j, asm.Word),
			asm.LoadMem(asm.R2, rStore, taskOut+4*j, asm.Word),
			asm.JNE.Reg(asm.R1, asm.R2, "changed"),
		)
	}
	insns = append(insns,
		asm.Ja.Label("out"),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("changed"),
		asm.Mov.Imm(asm.R1, 1),
		kbtf.Atomic(asm.CmpXchg, rStore, asm.R1, asm.DWord, taskLock),
		asm.JNE.Imm(asm.R0, 0, "out"),
	)
	insns = append(insns, flush(true, "it", "it_release")...)
	insns = append(insns, release("it_release")...)
	return append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
}
