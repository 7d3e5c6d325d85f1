package exitcapture

import (
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedstat"
)

// TestHotPath pins what every context switch pays: the instructions before
// the dead-task branch.
func TestHotPath(t *testing.T) {
	l := layout{hook: HookSwitch, prevArg: 1, stateArg: 3, pid: field{8, 4}, tgid: field{12, 4}, start: field{16, 8},
		runtime: field{24, 8}, delay: field{32, 8}, pcount: field{40, 8}}
	old := l
	old.stateArg, old.state = -1, field{4, 4}
	for _, tc := range []struct {
		name string
		l    layout
		want int
	}{{"prev_state argument", l, 4}, {"state read from prev", old, 5}} {
		insns := program(tc.l, 4096)
		offs, err := insns.SymbolOffsets()
		if err != nil {
			t.Fatal(err)
		}
		if got := offs["dead"]; got != tc.want {
			t.Errorf("%s: %d instructions before the dead-task branch, want %d:\n%v", tc.name, got, tc.want, insns)
		}
	}
}

// TestFreeHookNoBranch: at sched_process_free every run is a dead task, so
// the program tests no state: it starts with the task and reserves the
// record at once.
func TestFreeHookNoBranch(t *testing.T) {
	l := layout{hook: HookFree, pid: field{8, 4}, tgid: field{12, 4}, start: field{16, 8},
		runtime: field{24, 8}, delay: field{32, 8}, pcount: field{40, 8}}
	insns := program(l, 4096)
	if insns[0].OpCode.Class() != asm.LdXClass || insns[0].Dst != asm.R6 || insns[0].Src != asm.R1 || insns[0].Offset != 0 {
		t.Errorf("first instruction %v, want the task loaded from the context's slot 0 into R6", insns[0])
	}
	for _, ins := range insns[:4] {
		if ins.OpCode.JumpOp() == asm.JSet {
			t.Errorf("state test %v in the free hook", ins)
		}
	}
	if got := collectionSpec(l, 4096).Programs[progName].AttachTo; got != "sched_process_free" {
		t.Errorf("attaches to %q", got)
	}
}

func TestParseRecord(t *testing.T) {
	b := make([]byte, recordSize)
	ne := binary.NativeEndian
	ne.PutUint32(b[recTID:], 4242)
	ne.PutUint32(b[recTGID:], 4200)
	ne.PutUint64(b[recStart:], 1_615_339_999_999) // ns since boot
	ne.PutUint64(b[recCgroup:], 7)
	ne.PutUint64(b[recRun:], 1000)
	ne.PutUint64(b[recWait:], 20)
	ne.PutUint64(b[recSlices:], 3)
	ne.PutUint64(b[recAncestors:], 5)
	ne.PutUint64(b[recAncestors+8:], 1)
	got, ok := parseRecord(b)
	if !ok {
		t.Fatal("record not parsed")
	}
	want := record{TID: 4242, TGID: 4200, StartNanoseconds: 1_615_339_999_999, CgroupID: 7, Ancestors: [container.MaxExitAncestors]uint64{5, 1},
		Final: schedstat.Stat{RunNanoseconds: 1000, WaitNanoseconds: 20, Timeslices: 3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// nsec_to_clock_t truncates: 161533.99... ticks is 161533.
	if got.StartTime() != 161533 {
		t.Errorf("StartTime = %d, want 161533", got.StartTime())
	}
	if _, ok := parseRecord(b[:recordSize-1]); ok {
		t.Error("short record parsed")
	}
}
