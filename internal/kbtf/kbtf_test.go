package kbtf

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// TestCgroups finds the cgroup layout in the running kernel's BTF for
// cgroup2 and for v1 controllers, and refuses an unknown controller.
func TestCgroups(t *testing.T) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	v2, err := Cgroups(spec, "")
	if err != nil {
		t.Fatal(err)
	}
	if v2.dflCgrp.Size != 8 || v2.subsys.Size != 0 || v2.kn.Size != 8 || v2.knID.Size != 8 || v2.parent.Size != 8 {
		t.Errorf("cgroup2 layout %+v", v2)
	}
	cpu, err := Cgroups(spec, "cpu,cpuacct")
	if err != nil {
		t.Fatal(err)
	}
	acct, err := Cgroups(spec, "cpuacct")
	if err != nil {
		t.Fatal(err)
	}
	if cpu.dflCgrp.Size != 0 || cpu.subsys.Offset == acct.subsys.Offset {
		t.Errorf("v1 layouts: cpu,cpuacct %+v, cpuacct %+v: want the subsys slots of two controllers", cpu, acct)
	}
	if _, err := Cgroups(spec, "nosuch"); !errors.Is(err, ErrLayout) {
		t.Errorf("unknown controller: %v, want ErrLayout", err)
	}
}
