package exitcapture

import (
	"fmt"
	"strings"
)

// Hook is the kernel event a Source takes a dead task's final counters at.
type Hook int

const (
	// HookAuto picks HookFree where the kernel has it and HookSwitch
	// otherwise.
	HookAuto Hook = iota
	// HookFree is tp_btf/sched_process_free: it fires once per task, when
	// the task_struct is released after both its reap and its final
	// switch away (an RCU callback that waits for both), so the counters
	// are final, and it never runs on a context switch.
	HookFree
	// HookSwitch is tp_btf/sched_switch: it runs on every context switch
	// of the node and sends a record when the previous task is dead. It
	// is the fallback for kernels where sched_process_free cannot be
	// attached.
	HookSwitch
)

// String returns the tracepoint's name, or "auto".
func (h Hook) String() string {
	if h == HookAuto {
		return "auto"
	}
	return h.tracepoint()
}

// tracepoint is the name of the BTF tracepoint of h.
func (h Hook) tracepoint() string {
	if h == HookSwitch {
		return "sched_switch"
	}
	return "sched_process_free"
}

// hooks returns the hooks Open tries for h, in order.
func (h Hook) hooks() []Hook {
	if h == HookAuto {
		return []Hook{HookFree, HookSwitch}
	}
	return []Hook{h}
}

// Hooks returns the names ParseHook takes, as String gives them.
func Hooks() []string {
	return []string{HookAuto.String(), HookFree.String(), HookSwitch.String()}
}

// ParseHook returns the Hook whose String is name.
func ParseHook(name string) (Hook, error) {
	for _, h := range []Hook{HookAuto, HookFree, HookSwitch} {
		if h.String() == name {
			return h, nil
		}
	}
	return HookAuto, fmt.Errorf("exit hook %q: not one of %s", name, strings.Join(Hooks(), ", "))
}
