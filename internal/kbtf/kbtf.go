// Package kbtf finds the byte offsets of kernel struct members in BTF, for
// the eBPF programs that are assembled at load time (exitcapture,
// taskiter): offsets come from the running kernel, so one binary runs on
// many kernels.
package kbtf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// ErrLayout is wrapped by every error Offset returns.
var ErrLayout = errors.New("kernel BTF lacks a needed field")

// Offset returns the byte offset of the member at path below t, a struct
// or union, and the member's type. It looks through anonymous structs and
// unions, where randomized layouts and unions hide members. Bitfields do
// not qualify.
func Offset(t btf.Type, path ...string) (int, btf.Type, error) {
	off, mt, ok := member(t, path[0])
	if !ok {
		return 0, nil, fmt.Errorf("%w: no member %q in %v", ErrLayout, path[0], t)
	}
	if len(path) == 1 {
		return off, mt, nil
	}
	rest, rt, err := Offset(mt, path[1:]...)
	return off + rest, rt, err
}

// IsInt reports whether t is an integer type, through typedefs and
// qualifiers.
func IsInt(t btf.Type) bool {
	_, ok := btf.UnderlyingType(t).(*btf.Int)
	return ok
}

// member finds the member called name in t, a struct or union, or in its
// anonymous members, and returns its byte offset from the start of t.
func member(t btf.Type, name string) (int, btf.Type, bool) {
	var ms []btf.Member
	switch c := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		ms = c.Members
	case *btf.Union:
		ms = c.Members
	default:
		return 0, nil, false
	}
	for _, m := range ms {
		if m.BitfieldSize != 0 || m.Offset%8 != 0 {
			continue
		}
		base := int(m.Offset / 8)
		if m.Name == name {
			return base, m.Type, true
		}
		if m.Name == "" {
			if off, mt, ok := member(m.Type, name); ok {
				return base + off, mt, true
			}
		}
	}
	return 0, nil, false
}

// Load returns the instruction that reads the size-byte (4 or 8) integer
// at offset off of the struct src points to into dst, zero extended to 64
// bits.
func Load(dst, src asm.Register, off int16, size int) asm.Instruction {
	width := asm.DWord
	if size == 4 {
		width = asm.Word
	}
	return asm.LoadMem(dst, src, off, width)
}
