package exitcapture

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/kbtf"
)

// A move record is an exit record's fields, taken from the task just
// moved (its counters at the move and its new cgroup with its ancestors),
// followed by a u64 kind: the ring carries both, and a record's length
// tells them apart.
const (
	moveProgName   = "schedstatd_move"
	moveTracepoint = kbtf.AttachTracepoint
	recordKindMove = 1
	moveRecordSize = recordSize + 8
)

// moveLayout is where cgroup_attach_task's context holds the destination
// cgroup and the task: (struct cgroup *dst_cgrp, const char *path, struct
// task_struct *task, bool threadgroup).
type moveLayout struct {
	dstArg, taskArg int
}

// kernelMoveLayout checks cgroup_attach_task's arguments in the kernel's
// BTF.
func kernelMoveLayout(spec *btf.Spec) (moveLayout, error) {
	dst, task, err := kbtf.AttachArgs(spec)
	if err != nil {
		return moveLayout{}, fmt.Errorf("%w: %w", errLayout, err)
	}
	return moveLayout{dstArg: dst, taskArg: task}, nil
}

// moveProgram returns the handler of cgroup_attach_task, which the kernel
// calls after a successful move of a task (the leader alone when a whole
// process moves) into dst_cgrp, in any hierarchy: it sends the task's
// record only when its cgroup in the walked hierarchy is now dst_cgrp, so
// a move in another v1 hierarchy of a hybrid node sends nothing.
func moveProgram(l layout, ml moveLayout, wakeAt uint32) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R6, asm.R1, int16(8*ml.taskArg), asm.DWord),
		asm.LoadMem(asm.R9, asm.R1, int16(8*ml.dstArg), asm.DWord),
	}
	insns = append(insns, l.cgroup.TaskCgroup(asm.R7, asm.R6, "out")...)
	insns = append(insns, asm.JNE.Reg(asm.R7, asm.R9, "out"))
	return append(insns, sendRecord(l, moveRecordSize, wakeAt)...)
}

// openMoves loads the move program into the collection's ring and lost
// count and attaches it. Its failure leaves exit capture as it is.
func (s *Source) openMoves(l layout, kernel *btf.Spec, ringBytes int) error {
	ml, err := kernelMoveLayout(kernel)
	if err != nil {
		return err
	}
	spec := collectionSpec(l, ringBytes)
	spec.Programs = map[string]*ebpf.ProgramSpec{
		moveProgName: {
			Name:         moveProgName,
			Type:         ebpf.Tracing,
			AttachType:   ebpf.AttachTraceRawTp,
			AttachTo:     moveTracepoint,
			License:      license,
			Instructions: moveProgram(l, ml, uint32(ringBytes/2)),
		},
	}
	coll, err := kbtf.LoadProgram(func() (*ebpf.Collection, error) {
		return ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: map[string]*ebpf.Map{
			ringName: s.coll.Maps[ringName],
			lostName: s.coll.Maps[lostName],
		}})
	})
	if err != nil {
		return err
	}
	lk, err := link.AttachTracing(link.TracingOptions{Program: coll.Programs[moveProgName], AttachType: ebpf.AttachTraceRawTp})
	if err != nil {
		coll.Close()
		return fmt.Errorf("%w: attach to %s: %w", ErrUnsupported, moveTracepoint, err)
	}
	s.moveColl, s.moveLink = coll, lk
	return nil
}

// Migrations reports whether s sends move records (see Options.SkipMigrations);
// when it does not, MigrationsErr says why. Both may be called from any
// goroutine.
func (s *Source) Migrations() bool { return s != nil && s.moveLink != nil }

// MigrationsErr returns why s sends no move records, or nil.
func (s *Source) MigrationsErr() error {
	if s == nil {
		return nil
	}
	return s.moveErr
}

// drainMoves hands every move record received so far to fn, in order.
func (s *Source) drainMoves(fn func(container.Migration)) {
	s.mu.Lock()
	s.moves, s.moveSpare = s.moveSpare[:0], s.moves
	s.mu.Unlock()
	for _, m := range s.moveSpare {
		fn(m)
	}
}

// migration returns a move record as the accounting takes it. The program
// cannot tell the cgroup the task left: the accounting knows it for a task
// it tracks, and credits a task it never saw to the root up to the move.
func (r record) migration() container.Migration {
	return container.Migration{TID: r.TID, StartTime: r.StartTime(), At: r.Final, To: r.CgroupID, ToAncestors: r.Ancestors}
}
