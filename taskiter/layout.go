package taskiter

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"
	"github.com/schedstatd/schedstatd/internal/kbtf"
)

// field is where one scalar or pointer sits in a kernel struct: its byte
// offset and its size (4 or 8).
type field struct {
	offset int32
	size   int
}

// layout is what the program needs to know about the running kernel: where
// the fields it reads sit in task_struct and in the structs on the way from
// a task to its cgroup's kernfs node, and how to find the task's id in the
// reader's PID namespace.
type layout struct {
	pid, exitState, start field // task_struct.pid, .exit_state, .start_boottime
	runtime, delay        field // se.sum_exec_runtime, sched_info.run_delay
	pcount                field // sched_info.pcount

	// The cgroup id: task->cgroups, then css_set.dfl_cgrp (v2), or
	// css_set.subsys[subsys] and cgroup_subsys_state.cgroup (v1); then
	// cgroup.kn and kernfs_node.id.
	cgroups, dflCgrp, subsys, cssCgroup, kn, knID field

	// The id in the reader's PID namespace: the reader's
	// current->thread_pid->level gives the level L of its namespace, and a
	// task's id there is task->thread_pid->numbers[L].nr, numbers being an
	// array of struct upid of upidSize bytes.
	threadPid, pidLevel, numbers, upidNr field
	upidSize                             int
}

// errLayout is wrapped by every error about the kernel's types.
var errLayout = errors.New("kernel types")

// kernelLayout finds the layout in the kernel's BTF. controller is "" for
// a v2 cgroup id, or the v1 controller whose hierarchy is walked ("cpuacct",
// "cpu", ...).
func kernelLayout(spec *btf.Spec, controller string) (layout, error) {
	var l layout
	var err error
	get := func(name string, path ...string) field {
		if err != nil {
			return field{}
		}
		var s *btf.Struct
		if err = spec.TypeByName(name, &s); err != nil {
			err = fmt.Errorf("%w: %w", errLayout, err)
			return field{}
		}
		var f field
		f, err = findField(s, path...)
		return f
	}
	l.pid = get("task_struct", "pid")
	l.exitState = get("task_struct", "exit_state")
	l.start = get("task_struct", "start_boottime")
	l.runtime = get("task_struct", "se", "sum_exec_runtime")
	l.delay = get("task_struct", "sched_info", "run_delay")
	l.pcount = get("task_struct", "sched_info", "pcount")
	l.cgroups = get("task_struct", "cgroups")
	l.kn = get("cgroup", "kn")
	l.knID = get("kernfs_node", "id")
	l.threadPid = get("task_struct", "thread_pid")
	l.pidLevel = get("pid", "level")
	l.numbers = get("pid", "numbers")
	l.upidNr = get("upid", "nr")
	if controller == "" {
		l.dflCgrp = get("css_set", "dfl_cgrp")
	} else {
		l.subsys = get("css_set", "subsys")
		l.cssCgroup = get("cgroup_subsys_state", "cgroup")
	}
	if err != nil {
		return l, err
	}
	var upid *btf.Struct
	if err := spec.TypeByName("upid", &upid); err != nil {
		return l, fmt.Errorf("%w: %w", errLayout, err)
	}
	l.upidSize = int(upid.Size)
	if controller != "" {
		id, err := subsysID(spec, controller)
		if err != nil {
			return l, err
		}
		l.subsys.offset += int32(8 * id)
	}
	return l, nil
}

// subsysID returns the index of controller in css_set.subsys: the value
// of <controller>_cgrp_id in enum cgroup_subsys_id. A comounted name such
// as "cpu,cpuacct" takes the first controller the kernel knows.
func subsysID(spec *btf.Spec, controller string) (int, error) {
	var e *btf.Enum
	if err := spec.TypeByName("cgroup_subsys_id", &e); err != nil {
		return 0, fmt.Errorf("%w: %w", errLayout, err)
	}
	for _, c := range strings.Split(controller, ",") {
		for _, v := range e.Values {
			if v.Name == c+"_cgrp_id" {
				return int(v.Value), nil
			}
		}
	}
	return 0, fmt.Errorf("%w: no cgroup controller %q in this kernel", errLayout, controller)
}

func isPointerOrArray(t btf.Type) bool {
	switch btf.UnderlyingType(t).(type) {
	case *btf.Pointer, *btf.Array:
		return true
	}
	return false
}

// findField returns the offset and size of the member at path below t, a
// struct or union (see kbtf.Offset). The last member must be a 4- or 8-byte
// integer, a pointer, or an array (whose offset is what counts).
func findField(t btf.Type, path ...string) (field, error) {
	off, mt, err := kbtf.Offset(t, path...)
	if err != nil {
		return field{}, fmt.Errorf("%w: %w", errLayout, err)
	}
	last := path[len(path)-1]
	if off > 1<<15-8 {
		return field{}, fmt.Errorf("%w: member %q at offset %d is out of reach", errLayout, last, off)
	}
	if _, ok := btf.UnderlyingType(mt).(*btf.Array); ok {
		return field{offset: int32(off), size: 8}, nil
	}
	size, err := btf.Sizeof(mt)
	if err != nil || (size != 4 && size != 8) || !(kbtf.IsInt(mt) || isPointerOrArray(mt)) {
		return field{}, fmt.Errorf("%w: member %q is %v, not a 4- or 8-byte integer or pointer", errLayout, last, mt)
	}
	return field{offset: int32(off), size: size}, nil
}
