package kbtf

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// Field is where one scalar or pointer sits in a kernel struct: its byte
// offset and its size (4 or 8).
type Field struct {
	Offset int16
	Size   int
}

// CgroupLayout is where the kernel keeps, for a task, its cgroup in one
// hierarchy and that cgroup's id, and for a cgroup, its parent: what a
// program needs to name a task's cgroup by the id cgroupfs sees (the inode
// of the cgroup's directory).
type CgroupLayout struct {
	// task_struct.cgroups, then css_set.dfl_cgrp (v2), or
	// css_set.subsys[controller] and cgroup_subsys_state.cgroup (v1).
	cgroups, dflCgrp, subsys, cssCgroup Field
	// cgroup.kn and kernfs_node.id.
	kn, knID Field
	// cgroup.self.parent: the parent's own css, whose cgroup is the parent.
	parent Field
}

// Cgroups finds the CgroupLayout in the kernel's BTF. controller is "" for
// the cgroup2 hierarchy, or the v1 controller whose hierarchy is meant
// ("cpuacct", "cpu", or comounted "cpu,cpuacct").
func Cgroups(spec *btf.Spec, controller string) (CgroupLayout, error) {
	var l CgroupLayout
	var err error
	get := func(name string, path ...string) Field {
		if err != nil {
			return Field{}
		}
		var s *btf.Struct
		if err = spec.TypeByName(name, &s); err != nil {
			err = fmt.Errorf("%w: %w", ErrLayout, err)
			return Field{}
		}
		var f Field
		f, err = pointerOrInt(s, path...)
		return f
	}
	l.cgroups = get("task_struct", "cgroups")
	l.kn = get("cgroup", "kn")
	l.knID = get("kernfs_node", "id")
	l.parent = get("cgroup", "self", "parent")
	l.cssCgroup = get("cgroup_subsys_state", "cgroup")
	if controller == "" {
		l.dflCgrp = get("css_set", "dfl_cgrp")
		return l, err
	}
	l.subsys = get("css_set", "subsys")
	if err != nil {
		return l, err
	}
	id, err := SubsysID(spec, controller)
	if err != nil {
		return l, err
	}
	l.subsys.Offset += int16(8 * id)
	return l, nil
}

// SubsysID returns the index of controller in css_set.subsys: the value of
// <controller>_cgrp_id in enum cgroup_subsys_id. A comounted name such as
// "cpu,cpuacct" takes the first controller the kernel knows.
func SubsysID(spec *btf.Spec, controller string) (int, error) {
	var e *btf.Enum
	if err := spec.TypeByName("cgroup_subsys_id", &e); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrLayout, err)
	}
	for _, c := range strings.Split(controller, ",") {
		for _, v := range e.Values {
			if v.Name == c+"_cgrp_id" {
				return int(v.Value), nil
			}
		}
	}
	return 0, fmt.Errorf("%w: no cgroup controller %q in this kernel", ErrLayout, controller)
}

// pointerOrInt returns the offset and size of the member at path below t,
// which must be a 4- or 8-byte integer or a pointer, or an array (whose
// offset is what counts).
func pointerOrInt(t btf.Type, path ...string) (Field, error) {
	off, mt, err := Offset(t, path...)
	if err != nil {
		return Field{}, err
	}
	last := path[len(path)-1]
	if off > 1<<15-8 {
		return Field{}, fmt.Errorf("%w: member %q at offset %d is out of reach", ErrLayout, last, off)
	}
	switch btf.UnderlyingType(mt).(type) {
	case *btf.Array:
		return Field{Offset: int16(off), Size: 8}, nil
	case *btf.Pointer:
		return Field{Offset: int16(off), Size: 8}, nil
	}
	size, err := btf.Sizeof(mt)
	if err != nil || (size != 4 && size != 8) || !IsInt(mt) {
		return Field{}, fmt.Errorf("%w: member %q is %v, not a 4- or 8-byte integer or pointer", ErrLayout, last, mt)
	}
	return Field{Offset: int16(off), Size: size}, nil
}

// load reads f of the struct src points to into dst.
func (f Field) load(dst, src asm.Register) asm.Instruction {
	return Load(dst, src, f.Offset, f.Size)
}

// TaskCgroup returns instructions that load into dst the cgroup, in the
// layout's hierarchy, of the task src points to, jumping to miss where a
// pointer on the way is NULL. dst and src may be the same register.
func (l CgroupLayout) TaskCgroup(dst, src asm.Register, miss string) asm.Instructions {
	insns := asm.Instructions{
		l.cgroups.load(dst, src),
		asm.JEq.Imm(dst, 0, miss),
	}
	if l.dflCgrp.Size != 0 {
		return append(insns, l.dflCgrp.load(dst, dst), asm.JEq.Imm(dst, 0, miss))
	}
	return append(insns,
		l.subsys.load(dst, dst),
		asm.JEq.Imm(dst, 0, miss),
		l.cssCgroup.load(dst, dst),
		asm.JEq.Imm(dst, 0, miss),
	)
}

// TaskCSSSet returns the instruction that loads into dst the css_set of the
// task src points to (task_struct.cgroups), which tasks in the same
// cgroups share: a program may compare it as a number to tell whether two
// tasks are in the same cgroup.
func (l CgroupLayout) TaskCSSSet(dst, src asm.Register) asm.Instruction {
	return l.cgroups.load(dst, src)
}

// CgroupID returns instructions that load into dst the id of the cgroup
// src points to (its kernfs node id, the inode of its directory), jumping
// to miss if the node is NULL.
func (l CgroupLayout) CgroupID(dst, src asm.Register, miss string) asm.Instructions {
	return asm.Instructions{
		l.kn.load(dst, src),
		asm.JEq.Imm(dst, 0, miss),
		l.knID.load(dst, dst),
	}
}

// Parent returns instructions that load into dst the parent of the cgroup
// src points to, jumping to miss at the root. dst and src may be the same
// register.
func (l CgroupLayout) Parent(dst, src asm.Register, miss string) asm.Instructions {
	return asm.Instructions{
		l.parent.load(dst, src),
		asm.JEq.Imm(dst, 0, miss),
		l.cssCgroup.load(dst, dst),
		asm.JEq.Imm(dst, 0, miss),
	}
}
