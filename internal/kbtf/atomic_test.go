package kbtf

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
)

// TestAtomicEncoding: each atomic Atomic makes reaches the kernel with
// the operation in its immediate, as include/uapi/linux/bpf.h numbers
// them (BPF_ADD 0x00, BPF_FETCH 0x01, BPF_XCHG 0xe0 | BPF_FETCH,
// BPF_CMPXCHG 0xf0 | BPF_FETCH), opcode BPF_STX | BPF_ATOMIC | size.
func TestAtomicEncoding(t *testing.T) {
	for _, tc := range []struct {
		op  asm.AtomicOp
		imm uint32
	}{
		{asm.AddAtomic, 0x00},
		{asm.FetchAdd, 0x01},
		{asm.Xchg, 0xe1},
		{asm.CmpXchg, 0xf1},
	} {
		var buf bytes.Buffer
		if _, err := Atomic(tc.op, asm.R9, asm.R1, asm.DWord, 24).Marshal(&buf, binary.LittleEndian); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		if b[0] != 0xdb || b[1] != 0x19 || binary.LittleEndian.Uint16(b[2:]) != 24 {
			t.Errorf("%v: opcode, registers and offset % x, want db 19 18 00", tc.op, b[:4])
		}
		if got := binary.LittleEndian.Uint32(b[4:]); got != tc.imm {
			t.Errorf("%v: immediate %#x, want %#x", tc.op, got, tc.imm)
		}
	}
}

// TestAtomicReal runs compare-and-exchange and exchange in the kernel, in
// a socket filter over a map value of five u64: a compare that matches
// writes, one that does not leaves the value, and each leaves the old value
// where the instruction set says (R0; the source register for exchange).
func TestAtomicReal(t *testing.T) {
	e2e.RequireRoot(t)
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 40, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Put(uint32(0), [5]uint64{5}); err != nil {
		t.Fatal(err)
	}
	// The first u64 is 5: exchange it for 7 if it is 5 (it is), then
	// for 9 if it is 5 (it is not), then swap in 11. The others get the
	// old values each saw (5, 7, 7) and the value in the end (11).
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "kbtf_atomic", Type: ebpf.SocketFilter, License: "Dual MIT/GPL",
		Instructions: asm.Instructions{
			asm.StoreImm(asm.RFP, -8, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, m.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -8),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Reg(asm.R7, asm.R0),
			asm.Mov.Imm(asm.R0, 5),
			asm.Mov.Imm(asm.R1, 7),
			Atomic(asm.CmpXchg, asm.R7, asm.R1, asm.DWord, 0),
			asm.StoreMem(asm.R7, 8, asm.R0, asm.DWord),
			asm.Mov.Imm(asm.R0, 5),
			asm.Mov.Imm(asm.R1, 9),
			Atomic(asm.CmpXchg, asm.R7, asm.R1, asm.DWord, 0),
			asm.StoreMem(asm.R7, 16, asm.R0, asm.DWord),
			asm.Mov.Imm(asm.R1, 11),
			Atomic(asm.Xchg, asm.R7, asm.R1, asm.DWord, 0),
			asm.StoreMem(asm.R7, 24, asm.R1, asm.DWord),
			asm.LoadMem(asm.R1, asm.R7, 0, asm.DWord),
			asm.StoreMem(asm.R7, 32, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
			asm.Return(),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if _, err := prog.Run(&ebpf.RunOptions{Data: make([]byte, 14)}); err != nil {
		t.Fatal(err)
	}
	var got [5]uint64
	if err := m.Lookup(uint32(0), &got); err != nil {
		t.Fatal(err)
	}
	if want := [5]uint64{11, 5, 7, 7, 11}; got != want {
		t.Errorf("value %v after the exchanges, want %v", got, want)
	}
}
