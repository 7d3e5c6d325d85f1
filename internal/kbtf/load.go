package kbtf

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// ErrUnsupported is wrapped by the errors a BPF source's Open returns when
// the kernel or the process's privileges do not allow it: no kernel BTF, a
// kernel that lacks a type or refuses the program, missing CAP_BPF and
// CAP_PERFMON. The system error stays in the chain, so
// errors.Is(err, os.ErrPermission) tells privileges apart.
var ErrUnsupported = errors.New("unsupported")

// KernelSpec loads the running kernel's BTF, failing with an error that
// wraps ErrUnsupported.
func KernelSpec() (*btf.Spec, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("%w: kernel BTF: %w", ErrUnsupported, err)
	}
	return spec, nil
}

// LoadProgram creates a program or collection in the kernel with load, after
// lifting RLIMIT_MEMLOCK, which kernels before 5.11 charge BPF memory to.
// A failure wraps ErrUnsupported; a refusal for want of privileges says
// which are needed.
func LoadProgram[T any](load func() (T, error)) (T, error) {
	_ = rlimit.RemoveMemlock()
	obj, err := load()
	if errors.Is(err, os.ErrPermission) {
		// EPERM is the missing capability: cilium/ebpf's hint about
		// RLIMIT_MEMLOCK, which no kernel since 5.11 charges, misleads.
		return obj, fmt.Errorf("%w: loading the program: %w (EPERM): needs CAP_BPF and CAP_PERFMON, or root", ErrUnsupported, unix.EPERM)
	}
	if err != nil {
		return obj, fmt.Errorf("%w: load: %w", ErrUnsupported, err)
	}
	return obj, nil
}

// Member returns where the member at path below t, a struct or union,
// sits: a 4- or 8-byte integer, a pointer, or an array (whose offset is
// what counts).
func Member(t btf.Type, path ...string) (Field, error) { return pointerOrInt(t, path...) }
