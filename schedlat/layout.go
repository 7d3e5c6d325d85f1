package schedlat

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/btf"
	"github.com/schedstatd/schedstatd/internal/kbtf"
)

// pfKthread is PF_KTHREAD in include/linux/sched.h: task_struct.flags of a
// kernel thread.
const pfKthread = 0x00200000

// layout is what the program needs to know about the running kernel: which
// slots of the sched_switch context hold its arguments, and where the task
// fields it reads sit in task_struct.
type layout struct {
	// preemptArg, prevArg, nextArg and stateArg index the u64 slots of the
	// tp_btf context. A stateArg of -1 means the tracepoint has no
	// prev_state argument (before Linux 5.18) and the state is read from
	// prev itself.
	preemptArg, prevArg, nextArg, stateArg int
	state                                  kbtf.Field // task_struct.__state (or .state)

	pid, flags, start kbtf.Field // task_struct.pid, .flags, .start_boottime
	delay, pcount     kbtf.Field // sched_info.run_delay, sched_info.pcount

	// cgroup names a task's cgroup in the walked hierarchy.
	cgroup kbtf.CgroupLayout
}

// errLayout is wrapped by every error about the kernel's types.
var errLayout = errors.New("kernel types")

// kernelLayout finds the layout in the kernel's BTF. controller names the
// walked v1 hierarchy's controller, or is "" for cgroup2.
func kernelLayout(spec *btf.Spec, controller string) (layout, error) {
	var l layout
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_sched_switch", &td); err != nil {
		return l, fmt.Errorf("%w: sched_switch tracepoint: %w", errLayout, err)
	}
	var proto *btf.FuncProto
	if ptr, ok := btf.UnderlyingType(td.Type).(*btf.Pointer); ok {
		proto, _ = btf.UnderlyingType(ptr.Target).(*btf.FuncProto)
	}
	if proto == nil {
		return l, fmt.Errorf("%w: btf_trace_sched_switch is %v, not a function pointer", errLayout, td.Type)
	}
	// Params[0] is the tracepoint's private data; the context holds the
	// rest: (bool preempt, struct task_struct *prev, struct task_struct
	// *next [, unsigned int prev_state]).
	args := proto.Params[min(1, len(proto.Params)):]
	switch {
	case len(args) >= 4 && isTaskPtr(args[1].Type) && isTaskPtr(args[2].Type) && kbtf.IsInt(args[3].Type):
		l.stateArg = 3
	case len(args) == 3 && isTaskPtr(args[1].Type) && isTaskPtr(args[2].Type):
		l.stateArg = -1
	default:
		return l, fmt.Errorf("%w: unexpected sched_switch arguments %v", errLayout, proto)
	}
	l.preemptArg, l.prevArg, l.nextArg = 0, 1, 2

	var task *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		return l, fmt.Errorf("%w: %w", errLayout, err)
	}
	var err error
	get := func(path ...string) kbtf.Field {
		if err != nil {
			return kbtf.Field{}
		}
		var f kbtf.Field
		if f, err = kbtf.Member(task, path...); err != nil {
			err = fmt.Errorf("%w: %w", errLayout, err)
		}
		return f
	}
	l.pid = get("pid")
	l.flags = get("flags")
	l.start = get("start_boottime")
	l.delay = get("sched_info", "run_delay")
	l.pcount = get("sched_info", "pcount")
	if l.stateArg < 0 && err == nil {
		l.state, err = taskState(task)
	}
	if err != nil {
		return l, err
	}
	if l.cgroup, err = kbtf.Cgroups(spec, controller); err != nil {
		return l, fmt.Errorf("%w: %w", errLayout, err)
	}
	return l, nil
}

// taskState finds the task's state: task_struct.__state, or .state before
// Linux 5.14.
func taskState(task *btf.Struct) (kbtf.Field, error) {
	f, err := kbtf.Member(task, "__state")
	if err != nil {
		f, err = kbtf.Member(task, "state")
	}
	if err != nil {
		return f, fmt.Errorf("%w: %w", errLayout, err)
	}
	return f, nil
}

func isTaskPtr(t btf.Type) bool {
	p, ok := btf.UnderlyingType(t).(*btf.Pointer)
	if !ok {
		return false
	}
	s, ok := btf.UnderlyingType(p.Target).(*btf.Struct)
	return ok && s.Name == "task_struct"
}
