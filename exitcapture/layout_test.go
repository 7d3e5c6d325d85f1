package exitcapture

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/google/go-cmp/cmp"
)

// A made-up task_struct with the shapes kernels use: a nested struct, an
// anonymous union holding the wanted member, a typedef'd int and a
// bitfield.
func fakeTask() *btf.Struct {
	u32 := &btf.Int{Name: "unsigned int", Size: 4}
	u64 := &btf.Int{Name: "long long unsigned int", Size: 8}
	pidT := &btf.Typedef{Name: "pid_t", Type: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}}
	se := &btf.Struct{Name: "sched_entity", Size: 24, Members: []btf.Member{
		{Name: "load", Type: u64, Offset: 0},
		{Name: "sum_exec_runtime", Type: u64, Offset: 128},
	}}
	anon := &btf.Union{Size: 8, Members: []btf.Member{
		{Name: "start_boottime", Type: u64},
		{Name: "bits", Type: u32, BitfieldSize: 3},
	}}
	return &btf.Struct{Name: "task_struct", Size: 96, Members: []btf.Member{
		{Name: "__state", Type: u32, Offset: 8 * 8},
		{Name: "se", Type: se, Offset: 16 * 8},
		{Name: "pid", Type: pidT, Offset: 40 * 8},
		{Name: "flag", Type: u32, Offset: 44 * 8, BitfieldSize: 1},
		{Name: "", Type: anon, Offset: 48 * 8},
		{Name: "ptr", Type: &btf.Pointer{Target: se}, Offset: 56 * 8},
	}}
}

func TestFindField(t *testing.T) {
	task := fakeTask()
	for _, tc := range []struct {
		path []string
		want field
	}{
		{[]string{"__state"}, field{offset: 8, size: 4}},
		{[]string{"se", "sum_exec_runtime"}, field{offset: 32, size: 8}},
		{[]string{"pid"}, field{offset: 40, size: 4}},
		{[]string{"start_boottime"}, field{offset: 48, size: 8}},
	} {
		got, err := findField(task, tc.path...)
		if err != nil {
			t.Errorf("%v: %v", tc.path, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(field{})); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tc.path, diff)
		}
	}
	for _, bad := range [][]string{{"missing"}, {"flag"}, {"bits"}, {"ptr"}, {"se"}, {"pid", "x"}} {
		if _, err := findField(task, bad...); !errors.Is(err, errLayout) {
			t.Errorf("%v: got %v, want an error wrapping errLayout", bad, err)
		}
	}
}

// TestKernelLayout reads the running kernel's BTF: the shape this package
// was written against (Linux 5.18 and later: prev_state is the
// tracepoint's fourth argument), or before 5.18, where sched_switch has no
// prev_state argument, prev's own state field.
func TestKernelLayout(t *testing.T) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	l, err := kernelLayout(spec, "", HookSwitch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kernelLayout(spec, "cpuacct", HookSwitch); err != nil {
		t.Errorf("the v1 cpuacct hierarchy: %v", err)
	}
	if _, err := kernelLayout(spec, "nosuch", HookSwitch); !errors.Is(err, errLayout) {
		t.Errorf("an unknown controller: got %v, want an error wrapping errLayout", err)
	}
	t.Logf("%+v", l)
	switch {
	case l.prevArg != 1:
		t.Errorf("prev in slot %d; want 1", l.prevArg)
	case l.stateArg == -1 && l.state.size == 0:
		t.Errorf("no prev_state argument and no task state field")
	case l.stateArg == -1:
		t.Logf("sched_switch has no prev_state argument (before Linux 5.18): the state is read from prev at offset %d", l.state.offset)
	case l.stateArg != 3:
		t.Errorf("prev_state in slot %d; want 3", l.stateArg)
	}
	seen := map[int16]bool{}
	for _, f := range []field{l.pid, l.tgid, l.start, l.runtime, l.delay, l.pcount} {
		if f.size != 4 && f.size != 8 || seen[f.offset] {
			t.Errorf("bad or repeated field %+v", f)
		}
		seen[f.offset] = true
	}
	if l.tgid.offset != l.pid.offset+4 || l.pid.size != 4 {
		t.Errorf("pid %+v and tgid %+v are not two adjacent pid_t", l.pid, l.tgid)
	}
}

// TestKernelLayoutFree: sched_process_free takes the task as its one
// argument, in the context's first slot, in every kernel since BTF
// tracepoints exist.
func TestKernelLayoutFree(t *testing.T) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	l, err := kernelLayout(spec, "", HookFree)
	if err != nil {
		t.Fatal(err)
	}
	if l.hook != HookFree || l.taskArg != 0 || l.state.size != 0 {
		t.Errorf("layout %+v: want the free hook, the task in slot 0 and no state field", l)
	}
	if _, err := tracepointArgs(spec, "nosuch_tracepoint"); !errors.Is(err, errLayout) {
		t.Errorf("a missing tracepoint: got %v, want an error wrapping errLayout", err)
	}
}
