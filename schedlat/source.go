package schedlat

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/kbtf"
	"golang.org/x/sys/unix"
)

// ErrUnsupported is wrapped by the errors Open returns when the kernel or
// the process's privileges do not allow the program: no kernel BTF, no
// BPF task storage for tracing programs (Linux 5.10 and older), a walked
// hierarchy the program cannot name a task's cgroup in, a kernel that
// refuses the program, or missing CAP_BPF and CAP_PERFMON. It is the
// other BPF sources' too.
var ErrUnsupported = kbtf.ErrUnsupported

// Defaults for the zero Options fields.
const (
	DefaultMaxCgroups = 16384
	DefaultMaxPairs   = 4096
)

// Options configure Open.
type Options struct {
	// Hierarchy is the walked hierarchy, as cgroupfs.Open returns it:
	// counts are kept by the id of a task's cgroup there, the id a pass
	// lists (cgroupfs.Cgroup.ID). A v1 hierarchy must have a controller.
	// Required.
	Hierarchy *cgroupfs.Hierarchy
	// Latency and Preemption choose what the program counts; at least one
	// must be set.
	Latency, Preemption bool
	// MaxCgroups bounds the cgroups counted at once, MaxPairs the
	// (victim, preemptor) pairs; beyond them counts are lost and
	// counted. DefaultMaxCgroups and DefaultMaxPairs if 0.
	MaxCgroups, MaxPairs int
	// Load creates the program and maps of spec in the kernel; nil means
	// ebpf.NewCollection. Tests replace it to deny loading.
	Load func(spec *ebpf.CollectionSpec) (*ebpf.Collection, error)

	// stateFromTask builds the program for kernels whose sched_switch has
	// no prev_state argument, so tests can load it here.
	stateFromTask bool
	// direct builds the program without the fast path (progFeatures).
	direct bool
}

// Source is the loaded and attached program. Its methods may be called
// from any goroutine.
type Source struct {
	coll   *ebpf.Collection
	link   link.Link
	flush  *link.Iter // nil when direct
	stats  *ebpf.Map
	pairs  *ebpf.Map // nil without preemption
	lost   *ebpf.Map
	opts   Options
	loaded time.Time
	// unbuffered is why the kernel refused the program with the buffer
	// in the task's storage, when it did (nil when buffered, or asked
	// direct).
	unbuffered error

	// mu serialises reads and deletes of the maps.
	mu     sync.Mutex
	closed bool
	cpuBuf []cpuValue
}

// cpuValue is one CPU's counts of one cgroup, as the program keeps them.
type cpuValue [valueSlots]uint64

// Open loads the program, attaches it to sched_switch and starts counting.
// It needs kernel BTF, BPF task storage for tracing programs (for the
// latency), and CAP_BPF with CAP_PERFMON (or root); see ErrUnsupported.
func Open(opts Options) (*Source, error) {
	if opts.Hierarchy == nil {
		return nil, errors.New("schedlat: no hierarchy")
	}
	if !opts.Latency && !opts.Preemption {
		return nil, errors.New("schedlat: neither latency nor preemption asked for")
	}
	if opts.MaxCgroups == 0 {
		opts.MaxCgroups = DefaultMaxCgroups
	}
	if opts.MaxPairs == 0 {
		opts.MaxPairs = DefaultMaxPairs
	}
	if opts.Load == nil {
		opts.Load = ebpf.NewCollection
	}
	controller := ""
	if opts.Hierarchy.Version() == cgroupfs.V1 {
		controller = opts.Hierarchy.Name()
	}
	if err := Supported(); err != nil {
		return nil, err
	}
	kernel, err := kbtf.KernelSpec()
	if err != nil {
		return nil, err
	}
	l, err := kernelLayout(kernel, controller)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	if opts.stateFromTask {
		l.stateArg = -1
		var task *btf.Struct
		if err = kernel.TypeByName("task_struct", &task); err == nil {
			l.state, err = taskState(task)
		}
		if err != nil {
			return nil, err
		}
	}
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &now); err != nil {
		return nil, fmt.Errorf("schedlat: boot time: %w", err)
	}
	f := progFeatures{latency: opts.Latency, preemption: opts.Preemption, bornAfter: uint64(now.Nano()),
		maxCgroups: uint32(opts.MaxCgroups), maxPairs: uint32(opts.MaxPairs), direct: opts.direct}
	coll, err := kbtf.LoadProgram(func() (*ebpf.Collection, error) { return opts.Load(collectionSpec(l, f)) })
	var unbuffered error
	if err != nil && !f.direct && !errors.Is(err, os.ErrPermission) {
		// The buffer needs BPF atomics (Linux 5.12) and a task
		// iterator that takes task storage: without them, every
		// switch counts in its cgroup's stats.
		unbuffered = err
		f.direct = true
		coll, err = kbtf.LoadProgram(func() (*ebpf.Collection, error) { return opts.Load(collectionSpec(l, f)) })
	}
	if err != nil {
		return nil, err
	}
	s := &Source{coll: coll, stats: coll.Maps[statsName], pairs: coll.Maps[pairsName], lost: coll.Maps[lostName],
		opts: opts, loaded: time.Now(), unbuffered: unbuffered}
	if p := coll.Programs[flushName]; p != nil {
		if s.flush, err = link.AttachIter(link.IterOptions{Program: p}); err != nil {
			coll.Close()
			return nil, fmt.Errorf("%w: attach the flush iterator: %w", ErrUnsupported, err)
		}
	}
	s.link, err = link.AttachTracing(link.TracingOptions{Program: coll.Programs[progName], AttachType: ebpf.AttachTraceRawTp})
	if err != nil {
		if s.flush != nil {
			s.flush.Close()
		}
		coll.Close()
		return nil, fmt.Errorf("%w: attach to sched_switch: %w", ErrUnsupported, err)
	}
	return s, nil
}

// Supported reports, with an error wrapping ErrUnsupported, a kernel
// without BPF task storage (before Linux 5.11), which the latency needs.
func Supported() error {
	if err := features.HaveMapType(ebpf.TaskStorage); err != nil {
		return fmt.Errorf("%w: no BPF task storage in this kernel (Linux 5.11 or later): %w", ErrUnsupported, err)
	}
	return nil
}

// Buffered reports whether the program counts in each task's storage,
// flushed before each read, rather than in its cgroup's stats at every
// switch (about 40 ns more a switch, BenchmarkSwitch "both-direct"), and
// if not, why the kernel refused the buffer (nil for a nil Source).
func (s *Source) Buffered() (bool, error) {
	if s == nil {
		return false, nil
	}
	return s.flush != nil, s.unbuffered
}

// Latency and Preemption report what s counts; both are false for a nil
// Source.
func (s *Source) Latency() bool    { return s != nil && s.opts.Latency }
func (s *Source) Preemption() bool { return s != nil && s.opts.Preemption }

// Since returns when s started counting.
func (s *Source) Since() time.Time { return s.loaded }

// Close detaches the program and frees its maps. Reads after Close find
// nothing.
func (s *Source) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.link.Close()
	if s.flush != nil {
		err = errors.Join(err, s.flush.Close())
	}
	s.coll.Close()
	return err
}
