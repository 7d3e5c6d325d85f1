package aggregate

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/kbtf"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// ErrUnsupported is wrapped by the errors Open returns when the kernel or
// the process's privileges do not allow the source: no kernel BTF, no task
// storage (Linux 5.11), task iterator or sched_process_free, a walked
// hierarchy the programs cannot name a task's cgroup in, a PID namespace
// other than the host's, or missing CAP_BPF and CAP_PERFMON. It is the
// other BPF sources' too.
var ErrUnsupported = kbtf.ErrUnsupported

// DefaultMaxCgroups is the number of cgroups whose totals the kernel keeps
// at most when Options.MaxCgroups is 0: the cgroups that exist and those
// removed in the last half minute. Credits beyond it go to the root and
// are counted (Stats.Overflows).
const DefaultMaxCgroups = 1 << 16

// bpfIterCreate is BPF_ITER_CREATE in enum bpf_cmd.
const bpfIterCreate = 33

// Options configure Open.
type Options struct {
	// Hierarchy is the walked hierarchy, as cgroupfs.Open returns it: the
	// programs key totals by the id of a task's cgroup there. Required.
	Hierarchy *cgroupfs.Hierarchy
	// Exits attaches the sched_process_free program, so a task's time
	// counts up to its exit; without it, up to its last visit.
	Exits bool
	// Moves attaches a cgroup_attach_task program, so that what a thread
	// ran, waited and was scheduled between its last visit and a move into
	// another cgroup counts in the cgroup it left; without it, in the one
	// the next visit finds it in. It needs BPF atomics (Linux 5.12); where
	// the kernel refuses them the source loads without, and says so. A
	// process moved whole is reported by the kernel for its leader only:
	// its other threads count as without.
	Moves bool
	// MaxCgroups bounds the cgroups whose totals are kept;
	// DefaultMaxCgroups if 0.
	MaxCgroups int
	// PinPath is a directory on a bpf filesystem where the maps that keep
	// each task's last visit and each cgroup's totals are pinned, so that
	// a source opened after a restart of the daemon goes on with them
	// (see Begin); it is made if missing, and a bpf filesystem is mounted
	// at BPFFSRoot first if PinPath lies below it and none is. Pinned maps
	// that do not fit this source's (another MaxCgroups or layout) are
	// replaced by fresh ones. Empty, or if it cannot be used, the maps end
	// with the source; the log says why.
	PinPath string
	// Load creates the programs and maps of spec in the kernel; nil means
	// ebpf.NewCollectionWithOptions. Tests replace it to deny loading.
	Load func(spec *ebpf.CollectionSpec, opts ebpf.CollectionOptions) (*ebpf.Collection, error)
	// Logger takes the lines about the pinned maps; nil discards them.
	Logger *slog.Logger
}

// value is a cgroup's totals as the kernel keeps them (see totSize).
type value struct {
	Run, Wait, Slices uint64
	Session, Tasks    uint64
	Ancestors         [container.MaxExitAncestors]uint64
}

// Source is a loaded kernel-aggregating source: a task iterator that
// credits each task's increase since its last visit to its cgroup's
// totals, and optionally a sched_process_free program that credits a
// task's last stretch. Read runs the iterator and reads the totals;
// Lister serves a container table made with container.NewCgroupTable. A
// Source belongs to the goroutine that owns the table, except Stats,
// which any goroutine may call, and Close, which may be called once
// after that goroutine is done.
type Source struct {
	hier     *cgroupfs.Hierarchy
	opts     Options
	layout   layout
	coll     *ebpf.Collection
	iter     *link.Iter
	primeIt  *link.Iter
	free     link.Link // nil until the first read, and without Options.Exits
	move     link.Link // nil without Options.Moves
	exits    bool
	moves    bool // the move program is loaded
	primed   bool // the next read credits nothing
	totalsM  *ebpf.Map
	overflow *ebpf.Map
	// pinPath is where the maps are pinned, "" if they are not; reused
	// reports that they were pinned before this source loaded them, and
	// store is Store's answer.
	pinPath string
	reused  bool
	store   uint64

	keys   []uint64
	vals   []value
	totals []container.CgroupTotal

	reads, forgotten, overflows, exitCount atomic.Uint64
	cgroups, tasks                         atomic.Int64
}

var _ container.CgroupSource = (*Source)(nil)

// Open loads the programs and maps and attaches them. It needs kernel
// BTF, Linux 5.11 or later, the host's PID namespace and CAP_BPF with
// CAP_PERFMON (or root); see ErrUnsupported. With Options.PinPath, the
// owner of the table calls Begin before the first read.
func Open(opts Options) (*Source, error) {
	if opts.Hierarchy == nil {
		return nil, errors.New("aggregate: no hierarchy")
	}
	if opts.MaxCgroups == 0 {
		opts.MaxCgroups = DefaultMaxCgroups
	}
	if opts.Load == nil {
		opts.Load = ebpf.NewCollectionWithOptions
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	controller := ""
	if opts.Hierarchy.Version() == cgroupfs.V1 {
		controller = opts.Hierarchy.Name()
	}
	// The iterator visits the tasks of the reader's PID namespace only.
	if host, err := cgroupfs.InitialPIDNamespace("/proc"); err != nil || !host {
		return nil, fmt.Errorf("aggregating source %w: not in the host PID namespace (run with hostPID: true)", ErrUnsupported)
	}
	kernel, err := kbtf.KernelSpec()
	if err != nil {
		return nil, fmt.Errorf("aggregating source %w", err)
	}
	l, err := kernelLayout(kernel, controller)
	if err != nil {
		return nil, fmt.Errorf("aggregating source %w: %w", ErrUnsupported, err)
	}
	s := &Source{hier: opts.Hierarchy, opts: opts, layout: l, exits: opts.Exits, moves: opts.Moves && l.moveTaskArg >= 0}
	if opts.Moves && !s.moves {
		opts.Logger.Warn("kernel totals: no cgroup_attach_task tracepoint: a moved thread's time since its last visit counts in its new cgroup", "err", "not in the kernel's BTF")
	}
	if opts.PinPath != "" {
		mounted, err := preparePins(opts.PinPath, BPFFSRoot)
		switch {
		case err != nil:
			opts.Logger.Warn("kernel totals not pinned: a restart of the daemon loses the runqueue wait and timeslices live threads had since the last state write", "pin_path", opts.PinPath, "err", err)
		case mounted:
			opts.Logger.Info("mounted a bpf filesystem for the pinned kernel totals; in a container it ends with the container unless the host's is mounted there", "at", BPFFSRoot)
		}
		if err == nil {
			s.pinPath = opts.PinPath
		}
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// load creates the programs and maps, going on with those pinned in the
// pin path if they fit, and attaches the iterators.
func (s *Source) load() error {
	spec := collectionSpec(s.layout, s.opts.MaxCgroups, s.opts.Exits, s.moves)
	var copts ebpf.CollectionOptions
	s.reused = false
	if s.pinPath != "" {
		pin(spec)
		copts.Maps.PinPath = s.pinPath
		s.reused = pinsExist(s.pinPath)
	}
	coll, err := kbtf.LoadProgram(func() (*ebpf.Collection, error) { return s.opts.Load(spec, copts) })
	if err != nil && s.moves && !errors.Is(err, ebpf.ErrMapIncompatible) && !errors.Is(err, os.ErrPermission) {
		// A kernel without BPF atomics (before 5.12) refuses the
		// claims: the programs without the move one need none.
		s.opts.Logger.Warn("kernel totals without the move program: a moved thread's time since its last visit counts in its new cgroup", "err", err)
		s.moves = false
		spec = collectionSpec(s.layout, s.opts.MaxCgroups, s.opts.Exits, false)
		if s.pinPath != "" {
			pin(spec)
		}
		coll, err = kbtf.LoadProgram(func() (*ebpf.Collection, error) { return s.opts.Load(spec, copts) })
	}
	if err != nil && s.pinPath != "" && errors.Is(err, ebpf.ErrMapIncompatible) {
		s.opts.Logger.Warn("pinned kernel totals do not fit this daemon's: starting fresh ones", "pin_path", s.pinPath, "err", err)
		if rerr := removePins(s.pinPath); rerr != nil {
			return fmt.Errorf("aggregating source: %w", rerr)
		}
		s.reused = false
		coll, err = kbtf.LoadProgram(func() (*ebpf.Collection, error) { return s.opts.Load(spec, copts) })
	}
	if err != nil {
		return fmt.Errorf("aggregating source %w", err)
	}
	s.coll, s.totalsM, s.overflow = coll, coll.Maps[totalsName], coll.Maps[overflowName]
	s.store = 0
	if s.pinPath != "" {
		if tot, last := mapID(s.totalsM), mapID(coll.Maps[lastName]); tot != 0 && last != 0 {
			s.store = tot<<32 | last
		}
	}
	// Entry 0 takes what cannot be placed; it exists before any program
	// runs, so a full map always has it. Pinned maps may have it already.
	if err := s.totalsM.Update(uint64(0), value{}, ebpf.UpdateNoExist); err != nil && !errors.Is(err, ebpf.ErrKeyExist) {
		s.closeKernel()
		return fmt.Errorf("aggregating source: entry 0: %w", err)
	}
	if s.iter, err = link.AttachIter(link.IterOptions{Program: coll.Programs[iterName]}); err == nil {
		s.primeIt, err = link.AttachIter(link.IterOptions{Program: coll.Programs[primeName]})
	}
	if err == nil && s.moves {
		s.move, err = link.AttachTracing(link.TracingOptions{Program: coll.Programs[moveName], AttachType: ebpf.AttachTraceRawTp})
	}
	if err == nil && s.opts.Exits {
		// Attached and detached again, to know now that it attaches;
		// the first read attaches it for good (see Read).
		var l link.Link
		if l, err = s.attachFree(); err == nil {
			err = l.Close()
		}
	}
	if err != nil {
		s.closeKernel()
		return fmt.Errorf("aggregating source %w: attach: %w", ErrUnsupported, err)
	}
	return nil
}

// renew replaces the maps with fresh ones, pinned in their place.
func (s *Source) renew() error {
	if err := s.closeKernel(); err != nil {
		return fmt.Errorf("aggregating source: %w", err)
	}
	if err := removePins(s.pinPath); err != nil {
		return fmt.Errorf("aggregating source: %w", err)
	}
	return s.load()
}

// Store implements container.CgroupSource: with the maps pinned, the
// kernel ids of the totals and of the task storage, which no other map
// of this boot has; 0 when they end with the source.
func (s *Source) Store() uint64 { return s.store }

// Begin readies s for the first read of table, a table of totals made
// over s, after it was restored from a state if there was one. A table
// that goes on from the totals it credited from these very maps
// (container.RestoreStats.TotalsContinued: pinned, and kept since the
// state was taken) needs nothing: each task's next visit credits what it
// ran, waited and was scheduled since its last visit by the last daemon,
// and the exit program is attached at once. Otherwise maps pinned by an
// earlier daemon are replaced by fresh ones, and a restored table primes
// s (see Prime), as without pins.
func (s *Source) Begin(table *container.Table) error {
	rs := table.Restored()
	switch {
	case rs.TotalsContinued:
		if s.exits && s.free == nil {
			l, err := s.attachFree()
			if err != nil {
				return fmt.Errorf("aggregate: %w", err)
			}
			s.free = l
		}
		return nil
	case rs.Restored:
		return s.Prime()
	case s.reused:
		return s.renew()
	}
	return nil
}

// attachFree attaches the sched_process_free program.
func (s *Source) attachFree() (link.Link, error) {
	l, err := link.AttachTracing(link.TracingOptions{Program: s.coll.Programs[freeName], AttachType: ebpf.AttachTraceRawTp})
	if err != nil {
		return nil, fmt.Errorf("sched_process_free: %w", err)
	}
	return l, nil
}

// Prime makes the next read credit no task's time so far: it only notes
// each task's counters, so the read after it credits what they run from
// then on. A table restored from a state calls it before its first pass,
// as the state has counted the tasks up to the save (the run time between
// the save and that read is filled from the cgroups' own counters; see
// docs/design.md). Maps pinned by an earlier daemon are replaced by fresh
// ones first, as they may hold totals the state has counted. It must not
// follow a restore that continued the totals (see Begin).
func (s *Source) Prime() error {
	if s.reused {
		if err := s.renew(); err != nil {
			return err
		}
	}
	s.primed = true
	return nil
}

// Close detaches and unloads the programs; maps not pinned are freed, and
// pinned ones stay for the next source.
func (s *Source) Close() error { return s.closeKernel() }

// closeKernel detaches and unloads the programs and closes the maps.
func (s *Source) closeKernel() error {
	var errs []error
	if s.free != nil {
		errs = append(errs, s.free.Close())
	}
	if s.move != nil {
		errs = append(errs, s.move.Close())
	}
	if s.iter != nil {
		errs = append(errs, s.iter.Close())
	}
	if s.primeIt != nil {
		errs = append(errs, s.primeIt.Close())
	}
	if s.coll != nil {
		s.coll.Close()
	}
	s.free, s.move, s.iter, s.primeIt, s.coll = nil, nil, nil, nil, nil
	return errors.Join(errs...)
}

// controller is the walked v1 hierarchy's controller, or "" for cgroup2.
func (s *Source) controller() string {
	if s.hier.Version() == cgroupfs.V1 {
		return s.hier.Name()
	}
	return ""
}

// HasExitHook reports whether a task's last stretch is credited when it is
// freed (Options.Exits).
func (s *Source) HasExitHook() bool { return s != nil && s.exits }

// Read runs the iterator once, which credits every live task's increase
// in the kernel, and then reads every cgroup's totals. On error the
// totals of the last read stay. The first read attaches the
// sched_process_free program once it has visited every task, so a task
// that exits later never counts from nothing what a restored table counted
// already; one that exits before the first read, a moment after start,
// counts as without exit capture.
func (s *Source) Read() error {
	it := s.iter
	if s.primed {
		it = s.primeIt
	}
	if err := s.run(it); err != nil {
		return err
	}
	s.primed = false
	if s.exits && s.free == nil {
		l, err := s.attachFree()
		if err != nil {
			return fmt.Errorf("aggregate: %w", err)
		}
		s.free = l
	}
	return s.lookup()
}

// run creates an iterator of it and reads it to its end; the program
// writes nothing, so one read returns 0.
func (s *Source) run(it *link.Iter) error {
	attr := struct{ linkFD, flags uint32 }{linkFD: uint32(it.FD())}
	r, _, errno := unix.Syscall(unix.SYS_BPF, bpfIterCreate, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if errno != 0 {
		return fmt.Errorf("aggregate: create iterator: %w", errno)
	}
	fd := int(r)
	defer unix.Close(fd)
	var buf [64]byte
	for {
		n, err := unix.Read(fd, buf[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("aggregate: read iterator: %w", err)
		}
		if n == 0 {
			return nil
		}
	}
}

// lookup reads every entry of the totals in batches into s.totals. Tasks
// count only in entries of the latest session: the iterator's sessions
// are numbered up, and every entry it counted a task in this read holds
// the newest.
func (s *Source) lookup() error {
	n := 0
	var cursor ebpf.MapBatchCursor
	for {
		if len(s.keys)-n < batch {
			s.keys = append(s.keys, make([]uint64, batch)...)
			s.vals = append(s.vals, make([]value, batch)...)
		}
		m, err := s.totalsM.BatchLookup(&cursor, s.keys[n:n+batch], s.vals[n:n+batch], nil)
		n += m
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			break
		}
		if err != nil {
			return fmt.Errorf("aggregate: read totals: %w", err)
		}
	}
	var session uint64
	for i := range n {
		session = max(session, s.vals[i].Session)
	}
	s.totals = s.totals[:0]
	tasks := 0
	for i := range n {
		v := &s.vals[i]
		t := container.CgroupTotal{
			ID:        s.keys[i],
			Stat:      schedstat.Stat{RunNanoseconds: v.Run, WaitNanoseconds: v.Wait, Timeslices: v.Slices},
			Ancestors: v.Ancestors,
		}
		if v.Session == session && session != 0 {
			t.Tasks = int(v.Tasks)
			tasks += t.Tasks
		}
		s.totals = append(s.totals, t)
	}
	if cap(s.keys) > 4*n+4*batch {
		s.keys, s.vals = nil, nil
	}
	var over, exits uint64
	if err := s.overflow.Lookup(uint32(countOverflows), &over); err == nil {
		s.overflows.Store(over)
	}
	if err := s.overflow.Lookup(uint32(countExits), &exits); err == nil {
		s.exitCount.Store(exits)
	}
	s.reads.Add(1)
	s.cgroups.Store(int64(n))
	s.tasks.Store(int64(tasks))
	return nil
}

// batch is how many entries one lookup syscall reads at most.
const batch = 4096

// Totals implements container.CgroupSource: the totals of the last Read.
func (s *Source) Totals() []container.CgroupTotal { return s.totals }

// Exits implements container.CgroupSource: the tasks freed since the first
// read attached the sched_process_free program, at the last read; 0 for a
// nil Source.
func (s *Source) Exits() uint64 {
	if s == nil {
		return 0
	}
	return s.exitCount.Load()
}

// Forget implements container.CgroupSource: it deletes id's entry and
// returns its totals. A program that found the entry just before the
// delete may still add to it; that addition is lost (a task of a cgroup
// removed half a minute ago, freed at that instant).
func (s *Source) Forget(id uint64) (schedstat.Stat, bool) {
	if id == 0 {
		return schedstat.Stat{}, false
	}
	var v value
	err := s.totalsM.LookupAndDelete(id, &v)
	if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EINVAL) {
		// Hash maps delete on lookup from Linux 5.14.
		if err = s.totalsM.Lookup(id, &v); err == nil {
			err = s.totalsM.Delete(id)
		}
	}
	if err != nil {
		return schedstat.Stat{}, false
	}
	s.forgotten.Add(1)
	return schedstat.Stat{RunNanoseconds: v.Run, WaitNanoseconds: v.Wait, Timeslices: v.Slices}, true
}

// Stats are a Source's counts.
type Stats struct {
	// Reads counts completed reads (an iterator run and a read of the
	// totals).
	Reads uint64
	// Cgroups is the number of cgroups with totals at the last read, and
	// Tasks the live tasks the last read counted in them.
	Cgroups, Tasks int
	// Overflows counts credits the kernel could not file under their
	// cgroup, the totals being full: they went to the root. It is the
	// kernel's count at the last read.
	Overflows uint64
	// Forgotten counts entries of removed cgroups deleted.
	Forgotten uint64
}

// Stats returns s's counts; a nil Source has none. It may be called from
// any goroutine.
func (s *Source) Stats() Stats {
	if s == nil {
		return Stats{}
	}
	return Stats{Reads: s.reads.Load(), Cgroups: int(s.cgroups.Load()), Tasks: int(s.tasks.Load()), Overflows: s.overflows.Load(), Forgotten: s.forgotten.Load()}
}
