package kbtf

import (
	"fmt"

	"github.com/cilium/ebpf/btf"
)

// AttachTracepoint is the tracepoint the kernel fires after it moved a
// task into a cgroup, in any hierarchy: cgroup_attach_task(struct cgroup
// *dst_cgrp, const char *path, struct task_struct *task, bool
// threadgroup). A whole process's move fires it once, for the leader.
const AttachTracepoint = "cgroup_attach_task"

// TracepointArgs returns the arguments of the BTF tracepoint name as a
// tp_btf program's context holds them, one u64 each: the parameters of
// btf_trace_<name> but the first, the tracepoint's private data. An error
// wraps ErrLayout.
func TracepointArgs(spec *btf.Spec, name string) ([]btf.FuncParam, error) {
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_"+name, &td); err != nil {
		return nil, fmt.Errorf("%w: %s tracepoint: %w", ErrLayout, name, err)
	}
	var proto *btf.FuncProto
	if ptr, ok := btf.UnderlyingType(td.Type).(*btf.Pointer); ok {
		proto, _ = btf.UnderlyingType(ptr.Target).(*btf.FuncProto)
	}
	if proto == nil {
		return nil, fmt.Errorf("%w: btf_trace_%s is %v, not a function pointer", ErrLayout, name, td.Type)
	}
	return proto.Params[min(1, len(proto.Params)):], nil
}

// IsPtrTo reports whether t is a pointer to the struct named name.
func IsPtrTo(t btf.Type, name string) bool {
	p, ok := btf.UnderlyingType(t).(*btf.Pointer)
	if !ok {
		return false
	}
	s, ok := btf.UnderlyingType(p.Target).(*btf.Struct)
	return ok && s.Name == name
}

// AttachArgs returns the slots of the destination cgroup and of the task
// in AttachTracepoint's context, checked against the kernel's BTF; an
// error wraps ErrLayout.
func AttachArgs(spec *btf.Spec) (dst, task int, err error) {
	args, err := TracepointArgs(spec, AttachTracepoint)
	if err != nil {
		return 0, 0, err
	}
	if len(args) < 3 || !IsPtrTo(args[0].Type, "cgroup") || !IsPtrTo(args[2].Type, "task_struct") {
		return 0, 0, fmt.Errorf("%w: unexpected %s arguments %v", ErrLayout, AttachTracepoint, args)
	}
	return 0, 2, nil
}
