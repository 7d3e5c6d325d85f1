// Package synth is a synthetic kernel for tests and benchmarks of the
// accounting: tasks whose counters the caller sets, handles that behave as
// kept procfs fds do (they fail with ESRCH once their task exits, and never
// read a later task with the same id), and a cgroup tree whose thread lists
// the caller edits between passes. Nothing in it allocates per task on a
// steady-state pass.
package synth

import (
	"strings"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// Task is one synthetic task. Tests set Stat and Err between passes.
type Task struct {
	TID   int32
	Start uint64
	Stat  schedstat.Stat
	// Err, when set, is returned by reads of a live task.
	Err  error
	dead bool
}

// Kernel holds the live synthetic tasks by id.
type Kernel struct {
	live  map[int32]*Task
	clock uint64
	// Handles is the number of handles open now.
	Handles int
}

// NewKernel returns an empty kernel.
func NewKernel() *Kernel { return &Kernel{live: make(map[int32]*Task)} }

// Spawn starts a task with id tid and zero counters. It panics if tid is
// live, as a kernel never gives one id to two live tasks.
func (k *Kernel) Spawn(tid int32) *Task {
	if k.live[tid] != nil {
		panic("synth: id in use")
	}
	k.clock++
	t := &Task{TID: tid, Start: k.clock}
	k.live[tid] = t
	return t
}

// Exit ends the live task tid; its id is free again.
func (k *Kernel) Exit(tid int32) {
	if t := k.live[tid]; t != nil {
		t.dead = true
		delete(k.live, tid)
	}
}

// Compact rebuilds the kernel's own map, so that after a burst of tasks the
// synthetic kernel holds no more memory than its live tasks need and a
// measurement of the heap shows the table's memory, not the kernel's.
func (k *Kernel) Compact() {
	m := make(map[int32]*Task, len(k.live))
	for tid, t := range k.live {
		m[tid] = t
	}
	k.live = m
}

// Task returns the live task tid, or nil.
func (k *Kernel) Task(tid int32) *Task { return k.live[tid] }

// Now returns the kernel's clock: the start time of the task spawned last.
func (k *Kernel) Now() uint64 { return k.clock }

// Live returns the number of live tasks.
func (k *Kernel) Live() int { return len(k.live) }

// Open implements container.TaskOpener.
func (k *Kernel) Open(tid int32) (container.TaskHandle, error) {
	t := k.live[tid]
	if t == nil {
		return nil, unix.ENOENT
	}
	k.Handles++
	return &handle{k: k, t: t}, nil
}

type handle struct {
	k      *Kernel
	t      *Task
	closed bool
}

func (h *handle) StartTime() uint64 { return h.t.Start }

func (h *handle) Read() (schedstat.Stat, error) {
	switch {
	case h.closed:
		return schedstat.Stat{}, unix.EBADF
	case h.t.dead:
		return schedstat.Stat{}, unix.ESRCH
	case h.t.Err != nil:
		return schedstat.Stat{}, h.t.Err
	}
	return h.t.Stat, nil
}

func (h *handle) Close() error {
	if !h.closed {
		h.closed = true
		h.k.Handles--
	}
	return nil
}

// Tree is a synthetic cgroup hierarchy that implements cgroupfs.Lister.
// Tests edit Cgroups between passes; List copies it without allocating once
// the listing has grown to fit.
type Tree struct {
	Cgroups []cgroupfs.Cgroup
	// Err, when set, is returned by List.
	Err error
	// lastID is the last cgroup id given out: like inode numbers, ids are
	// never reused, so a cgroup made again under a path is a new one.
	lastID uint64
}

// NewTree returns a tree of the given paths, "/" first, each parent listed
// before its children. The parents are found from the paths.
func NewTree(paths ...string) *Tree {
	t := &Tree{}
	for _, p := range paths {
		t.Mkdir(p)
	}
	return t
}

// Mkdir adds a cgroup at path, whose parent must exist already.
func (t *Tree) Mkdir(path string) {
	parent := -1
	if path != "/" {
		dir := path[:strings.LastIndexByte(path, '/')]
		if dir == "" {
			dir = "/"
		}
		parent = t.Index(dir)
		if parent < 0 {
			panic("synth: no parent for " + path)
		}
	}
	t.lastID++
	t.Cgroups = append(t.Cgroups, cgroupfs.Cgroup{Path: path, Parent: parent, ID: t.lastID})
}

// ID returns the kernel id of the cgroup at path.
func (t *Tree) ID(path string) uint64 { return t.Cgroups[t.Index(path)].ID }

// Rmdir removes the cgroup at path, which must have no children.
func (t *Tree) Rmdir(path string) {
	i := t.Index(path)
	t.Cgroups = append(t.Cgroups[:i], t.Cgroups[i+1:]...)
	for j := range t.Cgroups {
		if t.Cgroups[j].Parent > i {
			t.Cgroups[j].Parent--
		}
	}
}

// Index returns the index of path, or -1.
func (t *Tree) Index(path string) int {
	for i := range t.Cgroups {
		if t.Cgroups[i].Path == path {
			return i
		}
	}
	return -1
}

// Set replaces the thread list of path.
func (t *Tree) Set(path string, tids ...int32) {
	c := &t.Cgroups[t.Index(path)]
	c.TIDs = append(c.TIDs[:0], tids...)
}

// List implements cgroupfs.Lister.
func (t *Tree) List(l *cgroupfs.Listing) error {
	if t.Err != nil {
		return t.Err
	}
	l.Reset()
	for i := range t.Cgroups {
		c := &t.Cgroups[i]
		d := l.Add(c.Path, c.Parent)
		d.ID = c.ID
		d.TIDs = append(d.TIDs, c.TIDs...)
		d.UsageNanoseconds, d.HasUsage = c.UsageNanoseconds, c.HasUsage
		d.Err, d.SubtreeUnread = c.Err, c.SubtreeUnread
		if d.Err != nil {
			l.Errors++
		}
		d.Bandwidth, d.Pressure = c.Bandwidth, c.Pressure
	}
	return nil
}
