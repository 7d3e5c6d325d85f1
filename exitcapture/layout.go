package exitcapture

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/btf"
	"github.com/schedstatd/schedstatd/internal/kbtf"
)

// taskDead is TASK_DEAD in include/linux/sched.h: the state a task is in
// when it switches away for the last time.
const taskDead = 0x80

// field is where one scalar sits in a kernel struct: its byte offset and
// its size (4 or 8).
type field struct {
	offset int16
	size   int
}

// layout is what the program needs to know about the running kernel: the
// hook it attaches to, which slot of that tracepoint's context holds the
// task (and, at sched_switch, the previous state), and where the task
// fields it reads sit in task_struct.
type layout struct {
	hook Hook
	// taskArg indexes the u64 slot of sched_process_free's context that
	// holds the task being freed.
	taskArg int
	// prevArg and stateArg index the u64 slots of sched_switch's context. A
	// stateArg of -1 means the tracepoint has no prev_state argument
	// (before Linux 5.18) and the state is read from prev itself.
	prevArg, stateArg int
	state             field // task_struct.__state (or .state)

	pid, tgid, start field
	runtime, delay   field // se.sum_exec_runtime, sched_info.run_delay
	pcount           field // sched_info.pcount

	// cgroup names the task's cgroup in the walked hierarchy.
	cgroup kbtf.CgroupLayout
}

// errLayout is wrapped by every error about the kernel's types.
var errLayout = errors.New("kernel types")

// kernelLayout finds the layout for hook (HookFree or HookSwitch) in the
// kernel's BTF. controller names the walked v1 hierarchy's controller, or
// is "" for cgroup2.
func kernelLayout(spec *btf.Spec, controller string, hook Hook) (layout, error) {
	l := layout{hook: hook}
	args, err := tracepointArgs(spec, hook.tracepoint())
	if err != nil {
		return l, err
	}
	switch {
	case hook == HookFree && len(args) >= 1 && isTaskPtr(args[0].Type):
		// (struct task_struct *p)
		l.taskArg = 0
	case hook == HookFree:
		return l, fmt.Errorf("%w: unexpected sched_process_free arguments %v", errLayout, args)
	// (bool preempt, struct task_struct *prev, struct task_struct *next
	// [, unsigned int prev_state])
	case len(args) >= 4 && isTaskPtr(args[1].Type) && kbtf.IsInt(args[3].Type):
		l.prevArg, l.stateArg = 1, 3
	case len(args) == 3 && isTaskPtr(args[1].Type):
		l.prevArg, l.stateArg = 1, -1
	default:
		return l, fmt.Errorf("%w: unexpected sched_switch arguments %v", errLayout, args)
	}

	var task *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		return l, fmt.Errorf("%w: %w", errLayout, err)
	}
	get := func(path ...string) field {
		if err != nil {
			return field{}
		}
		var f field
		f, err = findField(task, path...)
		return f
	}
	l.pid = get("pid")
	l.tgid = get("tgid")
	l.start = get("start_boottime")
	l.runtime = get("se", "sum_exec_runtime")
	l.delay = get("sched_info", "run_delay")
	l.pcount = get("sched_info", "pcount")
	if hook == HookSwitch && l.stateArg < 0 && err == nil {
		l.state, err = taskState(spec)
	}
	if err != nil {
		return l, err
	}
	if l.cgroup, err = kbtf.Cgroups(spec, controller); err != nil {
		return l, fmt.Errorf("%w: %w", errLayout, err)
	}
	return l, nil
}

// tracepointArgs is kbtf.TracepointArgs, its errors wrapping errLayout.
func tracepointArgs(spec *btf.Spec, name string) ([]btf.FuncParam, error) {
	args, err := kbtf.TracepointArgs(spec, name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errLayout, err)
	}
	return args, nil
}

func isTaskPtr(t btf.Type) bool { return kbtf.IsPtrTo(t, "task_struct") }

// findField returns the offset and size of the scalar at path below t, a
// struct or union (see kbtf.Offset). Only whole 4- or 8-byte integers
// qualify.
func findField(t btf.Type, path ...string) (field, error) {
	off, mt, err := kbtf.Offset(t, path...)
	if err != nil {
		return field{}, fmt.Errorf("%w: %w", errLayout, err)
	}
	size, err := btf.Sizeof(mt)
	if err != nil || (size != 4 && size != 8) || !kbtf.IsInt(mt) {
		return field{}, fmt.Errorf("%w: member %q is %v, not a 4- or 8-byte integer", errLayout, path[len(path)-1], mt)
	}
	if off > 1<<15-8 {
		return field{}, fmt.Errorf("%w: member %q at offset %d is out of reach", errLayout, path[len(path)-1], off)
	}
	return field{offset: int16(off), size: size}, nil
}

// taskState finds the task's state: task_struct.__state, or .state before
// Linux 5.14.
func taskState(spec *btf.Spec) (field, error) {
	var task *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		return field{}, fmt.Errorf("%w: %w", errLayout, err)
	}
	f, err := findField(task, "__state")
	if err != nil {
		f, err = findField(task, "state")
	}
	return f, err
}
