package exitcapture

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/kbtf"
)

// ErrUnsupported is wrapped by the errors Open returns when the kernel or
// the process's privileges do not allow exit capture: no kernel BTF, a
// walked hierarchy the program cannot name a task's cgroup in, a PID
// namespace other than the host's, a kernel that refuses the program, or
// missing CAP_BPF and CAP_PERFMON. It is the task iterator's too. The
// system error stays in the chain, so errors.Is(err, os.ErrPermission)
// tells privileges apart.
var ErrUnsupported = kbtf.ErrUnsupported

// Defaults for the zero Options fields.
const (
	DefaultRingBytes    = 1 << 20
	DefaultQueueLen     = 16384
	DefaultPollInterval = 20 * time.Millisecond
)

// Options configure Open.
type Options struct {
	// Hierarchy is the walked hierarchy, as cgroupfs.Open returns it: a
	// record names the task's cgroup by its id there, as the pass's
	// listing does (cgroupfs.Cgroup.ID). A v1 hierarchy must have a
	// controller ("cpuacct", "cpu", ...). Required.
	Hierarchy *cgroupfs.Hierarchy
	// RingBytes is the size of the kernel's ring buffer of records, a power
	// of two and a multiple of the page size; DefaultRingBytes if 0. A
	// record takes 112 bytes in it.
	RingBytes int
	// QueueLen bounds the records held between two drains; records beyond
	// it are counted lost. DefaultQueueLen if 0.
	QueueLen int
	// PollInterval is how often the reader looks for records; the kernel
	// wakes it sooner only when the ring is half full.
	// DefaultPollInterval if 0.
	PollInterval time.Duration
	// Hook is the event final counters are taken at; HookAuto (the zero
	// value) tries HookFree first, then HookSwitch.
	Hook Hook
	// SkipMigrations leaves out the program on cgroup_attach_task that
	// sends a task's counters when it moves into another cgroup of the
	// walked hierarchy; without it a moved task's increase since the last
	// pass, or its whole life if no pass saw it, goes to its new cgroup.
	SkipMigrations bool
	// Load creates the program and maps of spec in the kernel; nil means
	// ebpf.NewCollection. Tests replace it to deny loading.
	Load func(spec *ebpf.CollectionSpec) (*ebpf.Collection, error)

	// stateFromTask builds the sched_switch program for kernels whose
	// sched_switch has no prev_state argument, so tests can load it here.
	stateFromTask bool
}

// Source is a loaded and attached exit capture. A goroutine of its own
// reads the kernel's ring buffer into a bounded queue; Drain hands the
// queue to the goroutine that owns the table. Stats and Close may be
// called from any goroutine; Drain and Feed from one at a time.
type Source struct {
	coll   *ebpf.Collection
	link   link.Link
	hook   Hook
	reader *ringbuf.Reader
	max    int
	poll   time.Duration
	done   chan struct{}

	// moveColl and moveLink are the program on cgroup_attach_task, nil
	// when it is skipped or could not load (moveErr says why).
	moveColl *ebpf.Collection
	moveLink link.Link
	moveErr  error

	mu    sync.Mutex
	queue []container.Exit // filled by the reader goroutine
	spare []container.Exit // handed out by Drain
	// moves and moveSpare are the same for move records, which Feed
	// hands to the table before the exit records of the same drain: a
	// task's move is always written before its exit.
	moves, moveSpare []container.Migration
	// upTo is the monotonic clock at which the reader last found the ring
	// empty: every record written before it is in the queue.
	upTo int64

	events, dropped atomic.Uint64
	// moveEvents counts move records received, droppedMoves those the
	// queue had no room for.
	moveEvents, droppedMoves atomic.Uint64

	lostMu    sync.Mutex
	lostMap   *ebpf.Map // nil once closed
	lostFinal uint64    // the kernel's count at the last read

	closeOnce sync.Once
	closeErr  error
}

// Open loads the program, attaches it to the hook opts.Hook names (with
// HookAuto, sched_process_free where the kernel allows it, else
// sched_switch) and starts reading records. It needs kernel BTF and
// CAP_BPF with CAP_PERFMON (or root); see ErrUnsupported.
func Open(opts Options) (*Source, error) {
	opts = withDefaults(opts)
	if opts.Hierarchy == nil {
		return nil, errors.New("exitcapture: no hierarchy")
	}
	controller := ""
	if opts.Hierarchy.Version() == cgroupfs.V1 {
		controller = opts.Hierarchy.Name()
	}
	// Records name tasks by their ids in the initial PID namespace; the
	// table's ids are those of the daemon's.
	if host, err := cgroupfs.InitialPIDNamespace("/proc"); err != nil || !host {
		return nil, fmt.Errorf("exit capture %w: not in the host PID namespace (run with hostPID: true)", ErrUnsupported)
	}
	kernel, err := kbtf.KernelSpec()
	if err != nil {
		return nil, fmt.Errorf("exit capture %w", err)
	}
	if opts.stateFromTask {
		opts.Hook = HookSwitch
	}
	var s *Source
	var errs []error
	for _, hook := range opts.Hook.hooks() {
		if s, err = open(opts, kernel, controller, hook); err == nil {
			break
		}
		errs = append(errs, err)
		if errors.Is(err, os.ErrPermission) {
			break // no other hook loads without the privileges either
		}
	}
	if s == nil {
		return nil, errors.Join(errs...)
	}
	go s.read()
	return s, nil
}

// open loads and attaches the program of hook and makes the ring's reader.
func open(opts Options, kernel *btf.Spec, controller string, hook Hook) (*Source, error) {
	l, err := kernelLayout(kernel, controller, hook)
	if err != nil {
		return nil, fmt.Errorf("exit capture %w: %w", ErrUnsupported, err)
	}
	if opts.stateFromTask {
		l.stateArg = -1
		if l.state, err = taskState(kernel); err != nil {
			return nil, err
		}
	}
	coll, err := kbtf.LoadProgram(func() (*ebpf.Collection, error) { return opts.Load(collectionSpec(l, opts.RingBytes)) })
	if err != nil {
		return nil, fmt.Errorf("exit capture at %s %w", hook, err)
	}
	s := &Source{coll: coll, hook: hook, lostMap: coll.Maps[lostName], max: opts.QueueLen, poll: opts.PollInterval, done: make(chan struct{})}
	s.link, err = link.AttachTracing(link.TracingOptions{
		Program:    coll.Programs[progName],
		AttachType: ebpf.AttachTraceRawTp,
	})
	if err != nil {
		coll.Close()
		return nil, fmt.Errorf("exit capture %w: attach to %s: %w", ErrUnsupported, hook, err)
	}
	s.reader, err = ringbuf.NewReader(coll.Maps[ringName])
	if err != nil {
		s.link.Close()
		coll.Close()
		return nil, fmt.Errorf("exitcapture: ring buffer reader: %w", err)
	}
	if !opts.SkipMigrations {
		if err := s.openMoves(l, kernel, opts.RingBytes); err != nil {
			s.moveErr = fmt.Errorf("move records at %s %w", moveTracepoint, err)
		}
	}
	return s, nil
}

// Hook returns the event s takes final counters at. It may be called from
// any goroutine; a nil Source has HookAuto.
func (s *Source) Hook() Hook {
	if s == nil {
		return HookAuto
	}
	return s.hook
}

func withDefaults(o Options) Options {
	if o.RingBytes == 0 {
		o.RingBytes = DefaultRingBytes
	}
	if o.QueueLen == 0 {
		o.QueueLen = DefaultQueueLen
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Load == nil {
		o.Load = ebpf.NewCollection
	}
	return o
}
