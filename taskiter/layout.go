package taskiter

import (
	"errors"
	"fmt"

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

	// cgroup names the task's cgroup in the walked hierarchy.
	cgroup kbtf.CgroupLayout

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
	l.threadPid = get("task_struct", "thread_pid")
	l.pidLevel = get("pid", "level")
	l.numbers = get("pid", "numbers")
	l.upidNr = get("upid", "nr")
	if err != nil {
		return l, err
	}
	var upid *btf.Struct
	if err := spec.TypeByName("upid", &upid); err != nil {
		return l, fmt.Errorf("%w: %w", errLayout, err)
	}
	l.upidSize = int(upid.Size)
	if l.cgroup, err = kbtf.Cgroups(spec, controller); err != nil {
		return l, fmt.Errorf("%w: %w", errLayout, err)
	}
	return l, nil
}

// findField returns the offset and size of the member at path below t, a
// struct or union (see kbtf.Member): a 4- or 8-byte integer, a pointer, or
// an array (whose offset is what counts).
func findField(t btf.Type, path ...string) (field, error) {
	f, err := kbtf.Member(t, path...)
	if err != nil {
		return field{}, fmt.Errorf("%w: %w", errLayout, err)
	}
	return field{offset: int32(f.Offset), size: f.Size}, nil
}
