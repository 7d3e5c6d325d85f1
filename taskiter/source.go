package taskiter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/kbtf"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// ErrUnsupported is wrapped by the errors Open returns when the kernel or
// the process's privileges do not allow the iterator: no kernel BTF, a
// walked hierarchy the program cannot name a task's cgroup in, a kernel
// that refuses the program, or missing CAP_BPF and CAP_PERFMON. It is exit
// capture's too. The system error stays in the chain, so
// errors.Is(err, os.ErrPermission) tells privileges apart.
var ErrUnsupported = kbtf.ErrUnsupported

// bpfIterCreate is BPF_ITER_CREATE in enum bpf_cmd.
const bpfIterCreate = 33

// Options configure Open.
type Options struct {
	// Hierarchy is the walked hierarchy, as cgroupfs.Open returns it: the
	// program names each task's cgroup in it. A v1 hierarchy must have a
	// controller ("cpuacct", "cpu", ...); a name=systemd one is refused.
	// Required.
	Hierarchy *cgroupfs.Hierarchy
	// Load creates the program in the kernel; nil means ebpf.NewProgram.
	// Tests replace it to deny loading.
	Load func(spec *ebpf.ProgramSpec) (*ebpf.Program, error)
}

// record is one task as one read of the iterator saw it.
type record struct {
	tid    int32
	zombie bool
	start  uint64 // ns since boot
	cgroup uint64 // kernfs id of the task's cgroup in the walked hierarchy
	stat   schedstat.Stat
}

// Source is a loaded task iterator and the records of its last read. Read
// refreshes them; Lister and Opener serve a container.Table from them. A
// Source and everything made from it belong to the goroutine that owns the
// table, except Close, which may be called once from any goroutine after
// that goroutine is done.
type Source struct {
	hier *cgroupfs.Hierarchy
	prog *ebpf.Program
	link *link.Iter

	raw   []byte          // bytes of the last read
	recs  []record        // records of the last read
	index map[int32]int32 // tid -> index in recs
	peak  int             // largest len(index) since the map was made

	reads, unresolved atomic.Uint64
	tasks             atomic.Int64
}

// Open loads the program and attaches it as a task iterator. It needs
// kernel BTF and CAP_BPF with CAP_PERFMON (or root); see ErrUnsupported.
func Open(opts Options) (*Source, error) {
	if opts.Hierarchy == nil {
		return nil, errors.New("taskiter: no hierarchy")
	}
	controller := ""
	if opts.Hierarchy.Version() == cgroupfs.V1 {
		controller = opts.Hierarchy.Name()
	}
	if opts.Load == nil {
		opts.Load = ebpf.NewProgram
	}
	kernel, err := kbtf.KernelSpec()
	if err != nil {
		return nil, fmt.Errorf("task iterator %w", err)
	}
	l, err := kernelLayout(kernel, controller)
	if err != nil {
		return nil, fmt.Errorf("task iterator %w: %w", ErrUnsupported, err)
	}
	prog, err := kbtf.LoadProgram(func() (*ebpf.Program, error) { return opts.Load(programSpec(l)) })
	if err != nil {
		return nil, fmt.Errorf("task iterator %w", err)
	}
	it, err := link.AttachIter(link.IterOptions{Program: prog})
	if err != nil {
		prog.Close()
		return nil, fmt.Errorf("task iterator %w: attach: %w", ErrUnsupported, err)
	}
	return &Source{
		hier:  opts.Hierarchy,
		prog:  prog,
		link:  it,
		raw:   make([]byte, initialBuffer),
		index: make(map[int32]int32),
	}, nil
}

// Close detaches and unloads the program.
func (s *Source) Close() error {
	return errors.Join(s.link.Close(), s.prog.Close())
}

// Read runs the iterator once and replaces the records with every task it
// saw. On error the records of the previous read are gone too: a handle
// then reads its task as gone rather than reading stale counters.
// A steady-state read allocates nothing.
func (s *Source) Read() error {
	s.recs = s.recs[:0]
	clear(s.index)
	n, err := s.readAll()
	if err != nil {
		return err
	}
	if n%recordSize != 0 {
		return fmt.Errorf("taskiter: read %d bytes, not a whole number of %d-byte records", n, recordSize)
	}
	s.decode(s.raw[:n])
	s.trim(n)
	s.reads.Add(1)
	s.tasks.Store(int64(len(s.recs)))
	return nil
}

// readAll creates an iterator fd and reads it to its end into s.raw,
// growing it as needed, and returns the bytes read.
func (s *Source) readAll() (int, error) {
	attr := struct{ linkFD, flags uint32 }{linkFD: uint32(s.link.FD())}
	r, _, errno := unix.Syscall(unix.SYS_BPF, bpfIterCreate, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if errno != 0 {
		return 0, fmt.Errorf("taskiter: create iterator: %w", errno)
	}
	fd := int(r)
	defer unix.Close(fd)
	n := 0
	for {
		if len(s.raw)-n < readChunk {
			s.raw = slices.Grow(s.raw[:n], len(s.raw))
			s.raw = s.raw[:cap(s.raw)]
		}
		m, err := unix.Read(fd, s.raw[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("taskiter: read iterator: %w", err)
		}
		if m == 0 {
			return n, nil
		}
		n += m
	}
}

// readChunk is the least room a read of the iterator is given: the kernel
// fills a read from a seq_file buffer of eight pages at most.
const readChunk = 32 << 10

// initialBuffer is the size of the read buffer of a new Source; it grows
// to the largest read and shrinks back when reads get far smaller.
const initialBuffer = 64 << 10

// trim lets go of the read buffer and the records when they are far larger
// than the last read needed, so a burst of tasks does not pin its memory
// for the life of the Source.
func (s *Source) trim(n int) {
	if cap(s.raw) > 4*n+initialBuffer {
		s.raw = make([]byte, max(2*n, initialBuffer))
	}
	if cap(s.recs) > 4*len(s.recs)+minRebuild {
		s.recs = slices.Clone(s.recs)
	}
}

// decode fills s.recs and s.index from raw, whole records.
func (s *Source) decode(raw []byte) {
	n := len(raw) / recordSize
	if cap(s.recs) < n {
		s.recs = make([]record, 0, n+n/4)
	}
	if s.peak > 2*n+minRebuild {
		s.index = make(map[int32]int32, n)
		s.peak = 0
	}
	ne := binary.NativeEndian
	for i := range n {
		b := raw[i*recordSize : (i+1)*recordSize]
		r := record{
			tid:    int32(ne.Uint32(b[recTID:])),
			zombie: ne.Uint32(b[recExit:]) != 0,
			start:  ne.Uint64(b[recStart:]),
			cgroup: ne.Uint64(b[recCgroup:]),
			stat: schedstat.Stat{
				RunNanoseconds:  ne.Uint64(b[recRun:]),
				WaitNanoseconds: ne.Uint64(b[recWait:]),
				Timeslices:      ne.Uint64(b[recSlices:]),
			},
		}
		if r.tid <= 0 {
			continue
		}
		s.index[r.tid] = int32(len(s.recs))
		s.recs = append(s.recs, r)
	}
	s.peak = max(s.peak, len(s.index))
}

// minRebuild is the slack below which an oversized index is left alone.
const minRebuild = 1024

// lookup returns the record of tid in the last read.
func (s *Source) lookup(tid int32) (*record, bool) {
	i, ok := s.index[tid]
	if !ok {
		return nil, false
	}
	return &s.recs[i], true
}

// Tasks returns the number of tasks the last read saw, zombies included.
// It may be called from any goroutine.
func (s *Source) Tasks() int { return int(s.tasks.Load()) }

// Stats are a Source's counts since it was opened.
type Stats struct {
	// Reads counts the completed reads of the iterator.
	Reads uint64
	// Tasks is the number of tasks the last read saw, zombies included.
	Tasks int
	// Unresolved counts live tasks a Lister could not file because the
	// walk after the read did not find their cgroup (made or removed in
	// between): the table reads them as unlisted, crediting the cgroup it
	// last credited, and a later pass files them.
	Unresolved uint64
}

// Stats returns s's counts; a nil Source has none. It may be called from
// any goroutine.
func (s *Source) Stats() Stats {
	if s == nil {
		return Stats{}
	}
	return Stats{Reads: s.reads.Load(), Tasks: s.Tasks(), Unresolved: s.unresolved.Load()}
}
