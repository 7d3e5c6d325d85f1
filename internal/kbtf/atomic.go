package kbtf

import "github.com/cilium/ebpf/asm"

// Atomic returns the atomic instruction op on *(size *)(dst + offset)
// with src, as op.Mem would, encoded so that the kernel gets op.
//
// cilium/ebpf v0.22.0 writes an atomic instruction's immediate (which
// holds the operation: BPF_ADD, BPF_XCHG, BPF_CMPXCHG, with BPF_FETCH)
// from the instruction's Constant as it was before it moves the
// operation there, so every atomic but a plain add leaves as BPF_ADD:
// a compare-and-exchange adds src and leaves R0 alone. Atomic writes an
// add whose Constant is op's immediate, which that encoder writes as is
// and a fixed one ignores in favour of the opcode's (an add, the same
// bits). TestAtomicEncoding checks the bytes.
func Atomic(op asm.AtomicOp, dst, src asm.Register, size asm.Size, offset int16) asm.Instruction {
	ins := asm.AddAtomic.Mem(dst, src, size, offset)
	ins.Constant = int64(op >> 8)
	return ins
}
