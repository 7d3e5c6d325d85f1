package aggregate

import (
	"fmt"

	"github.com/cilium/ebpf/btf"
	"github.com/schedstatd/schedstatd/internal/kbtf"
)

// layout is what the programs need to know about the running kernel:
// where the task fields they read sit in task_struct, and how a task's
// cgroup in the walked hierarchy and that cgroup's ancestors are found.
type layout struct {
	exitState       kbtf.Field // task_struct.exit_state: nonzero once the task exited
	runtime, delay  kbtf.Field // se.sum_exec_runtime, sched_info.run_delay
	pcount          kbtf.Field // sched_info.pcount
	cgroup          kbtf.CgroupLayout
	freeTaskArg     int // slot of the task in sched_process_free's context
	moveTaskArg     int // slot of the task in cgroup_attach_task's context, -1 if the kernel lacks it
	iterMetaSession int16
	iterCtxMeta     int16
	iterCtxTask     int16
}

// kernelLayout finds the layout in the kernel's BTF. controller is "" for
// cgroup2, or the walked v1 hierarchy's controller.
func kernelLayout(spec *btf.Spec, controller string) (layout, error) {
	var l layout
	var task *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		return l, fmt.Errorf("%w: %w", kbtf.ErrLayout, err)
	}
	var err error
	get := func(path ...string) kbtf.Field {
		if err != nil {
			return kbtf.Field{}
		}
		var f kbtf.Field
		f, err = kbtf.Member(task, path...)
		return f
	}
	l.exitState = get("exit_state")
	l.runtime = get("se", "sum_exec_runtime")
	l.delay = get("sched_info", "run_delay")
	l.pcount = get("sched_info", "pcount")
	if err != nil {
		return l, err
	}
	if err := hasTaskStorage(spec); err != nil {
		return l, err
	}
	var meta *btf.Struct
	if err := spec.TypeByName("bpf_iter_meta", &meta); err != nil {
		return l, fmt.Errorf("%w: no task iterator: %w", kbtf.ErrLayout, err)
	}
	f, err := kbtf.Member(meta, "session_id")
	if err != nil {
		return l, err
	}
	l.iterMetaSession = f.Offset
	// struct bpf_iter__task { meta, task }, each a pointer.
	l.iterCtxMeta, l.iterCtxTask = 0, 8
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_sched_process_free", &td); err != nil {
		return l, fmt.Errorf("%w: no sched_process_free tracepoint: %w", kbtf.ErrLayout, err)
	}
	l.freeTaskArg = 0
	if _, l.moveTaskArg, err = kbtf.AttachArgs(spec); err != nil {
		l.moveTaskArg = -1 // moves count where the next visit finds the task
	}
	if l.cgroup, err = kbtf.Cgroups(spec, controller); err != nil {
		return l, err
	}
	return l, nil
}

// KernelSupports returns nil if the running kernel has what the source
// needs (kernel BTF, task storage, the task iterator, sched_process_free),
// and otherwise an error wrapping ErrUnsupported that says what is
// missing. Privileges are not checked.
func KernelSupports() error {
	spec, err := kbtf.KernelSpec()
	if err != nil {
		return err
	}
	if _, err := kernelLayout(spec, ""); err != nil {
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return nil
}

// hasTaskStorage reports, as an error, whether the kernel lacks task
// storage (BPF_MAP_TYPE_TASK_STORAGE, Linux 5.11), which the programs
// keep a task's last visit in.
func hasTaskStorage(spec *btf.Spec) error {
	var e *btf.Enum
	if err := spec.TypeByName("bpf_map_type", &e); err != nil {
		return fmt.Errorf("%w: %w", kbtf.ErrLayout, err)
	}
	for _, v := range e.Values {
		if v.Name == "BPF_MAP_TYPE_TASK_STORAGE" {
			return nil
		}
	}
	return fmt.Errorf("%w: no task storage (Linux 5.11)", kbtf.ErrLayout)
}
