package collector

import (
	"bytes"
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// TasksPath is where the daemon serves the tasks of one cgroup
// (CgroupTasks), under the same TLS, authentication and request limit as
// its metrics.
const TasksPath = "/api/v1/cgroups/tasks"

// MaxCmdline is the most bytes of a process's command line a CgroupTasks
// carries; a longer one is cut and marked.
const MaxCmdline = 256

// CgroupTasks is the answer of the tasks API: the processes and threads
// of one cgroup and of its descendants (whose time the cgroup's series
// include) at the end of one pass. Counters are cumulative since each
// thread started, as /proc/<tid>/schedstat shows them, so a client takes
// rates from two answers: the increase of each thread, known by its tid
// and start time, over the difference of their times. Names are label
// values, as cgroupfs.LabelValue makes them: valid UTF-8, a backslash
// doubled, an invalid byte written \xNN; control characters are left for
// the client to escape.
type CgroupTasks struct {
	// ID is the cgroup's kernel id, the inode of its directory; Path is
	// its path relative to the hierarchy root, the metrics' id label.
	ID   uint64 `json:"id"`
	Path string `json:"path"`
	// Time is when the pass the counters come from ended; with the kernel
	// totals, which keep no task, when the threads were read.
	Time time.Time `json:"time"`
	// Processes are in order of PID, each with its threads in the cgroup
	// or its descendants.
	Processes []Process `json:"processes"`
	// LeftOut counts the threads left out past MaxTasks: those that
	// waited least since they started.
	LeftOut int `json:"left_out,omitempty"`
	// Unread counts, with the kernel totals (their threads are read at
	// the request), the threads and cgroup thread lists that could not
	// be read though not gone; UnreadError is the first such error.
	Unread      int    `json:"unread,omitempty"`
	UnreadError string `json:"unread_error,omitempty"`
}

// Process is one process of a CgroupTasks and those of its threads that
// are in the cgroup or its descendants.
type Process struct {
	// PID is the process id (the thread group id). It is 0 for the
	// threads whose process could not be read because they exited or
	// their id was taken by another task since the pass.
	PID int32 `json:"pid"`
	// StartTicks is the process's start time in clock ticks since boot,
	// 0 when unknown: with PID, its identity.
	StartTicks uint64 `json:"start_ticks"`
	// Comm is the process's name (its leader's comm); Cmdline its
	// arguments joined by spaces, empty for a kernel thread, cut to
	// MaxCmdline bytes, with CmdlineTruncated set when cut.
	Comm             string `json:"comm"`
	Cmdline          string `json:"cmdline"`
	CmdlineTruncated bool   `json:"cmdline_truncated,omitempty"`
	// RunNanoseconds, RunqueueNanoseconds and Timeslices sum the
	// counters of Threads. They fall when a thread exits: take rates per
	// thread.
	RunNanoseconds      uint64 `json:"run_nanoseconds"`
	RunqueueNanoseconds uint64 `json:"runqueue_nanoseconds"`
	Timeslices          uint64 `json:"timeslices"`
	// Threads are in order of TID.
	Threads []Thread `json:"threads"`
}

// Thread is one thread of a Process.
type Thread struct {
	// TID and StartTicks (clock ticks since boot) are its identity.
	TID        int32  `json:"tid"`
	StartTicks uint64 `json:"start_ticks"`
	// Comm is the thread's name, empty when it could not be read.
	Comm string `json:"comm"`
	// Cgroup is the path of the cgroup the thread is in.
	Cgroup string `json:"cgroup"`
	// RunNanoseconds is the time it ran on a CPU, RunqueueNanoseconds
	// the time it waited on a runqueue, Timeslices the timeslices it
	// ran, since it started.
	RunNanoseconds      uint64 `json:"run_nanoseconds"`
	RunqueueNanoseconds uint64 `json:"runqueue_nanoseconds"`
	Timeslices          uint64 `json:"timeslices"`
}

// MaxTasks bounds the threads of one CgroupTasks: past it, those that
// waited least are left out and counted in LeftOut, so the answer for a
// node's root stays a few megabytes and is named in well under a second.
const MaxTasks = 16384

// NewCgroupTasks names the tasks of the cgroup of kernel id id at path,
// as a pass that ended at at left them, reading their names from the
// procfs mounted at procRoot. Each task's files are read through one
// directory fd on /proc/<tid>, which reads that task or fails once it is
// reaped, and a task whose start time there is not the one it was counted
// with is another task with the same id: neither is named after the task
// that holds the id now. Only the given tasks' files are read, from the
// caller's goroutine; tasks is reordered.
func NewCgroupTasks(procRoot string, id uint64, path string, at time.Time, tasks []container.TaskStats) *CgroupTasks {
	out := &CgroupTasks{ID: id, Path: cgroupfs.LabelValue(path), Time: at, Processes: []Process{}}
	if len(tasks) > MaxTasks {
		slices.SortFunc(tasks, func(a, b container.TaskStats) int { return cmp.Compare(b.Stat.WaitNanoseconds, a.Stat.WaitNanoseconds) })
		out.LeftOut = len(tasks) - MaxTasks
		tasks = tasks[:MaxTasks]
	}
	buf := make([]byte, statusPrefix)
	byPID := map[int32]int{}
	for _, ts := range tasks {
		th := Thread{
			TID: ts.TID, StartTicks: ts.StartTime, Cgroup: cgroupfs.LabelValue(ts.CgroupPath),
			RunNanoseconds: ts.Stat.RunNanoseconds, RunqueueNanoseconds: ts.Stat.WaitNanoseconds, Timeslices: ts.Stat.Timeslices,
		}
		var pid int32
		th.Comm, pid = threadNames(procRoot, ts, buf)
		i, ok := byPID[pid]
		if !ok {
			i = len(out.Processes)
			byPID[pid] = i
			p := Process{PID: pid}
			if pid != 0 {
				p.StartTicks, p.Comm, p.Cmdline, p.CmdlineTruncated = processNames(procRoot, pid, buf)
			}
			out.Processes = append(out.Processes, p)
		}
		p := &out.Processes[i]
		p.Threads = append(p.Threads, th)
		p.RunNanoseconds += th.RunNanoseconds
		p.RunqueueNanoseconds += th.RunqueueNanoseconds
		p.Timeslices += th.Timeslices
	}
	slices.SortFunc(out.Processes, func(a, b Process) int { return cmp.Compare(a.PID, b.PID) })
	for i := range out.Processes {
		slices.SortFunc(out.Processes[i].Threads, func(a, b Thread) int { return cmp.Compare(a.TID, b.TID) })
	}
	return out
}

// statusPrefix is how much of /proc/<tid>/stat, or of status before its
// Tgid line, is read: both fit with a comm of any length (64 bytes
// escaped at most).
const statusPrefix = 1024

// threadNames returns the comm and the process id of the task ts, or
// nothing when it is gone or its id now belongs to another task.
func threadNames(procRoot string, ts container.TaskStats, buf []byte) (string, int32) {
	dir, err := unix.Open(filepath.Join(procRoot, strconv.Itoa(int(ts.TID))), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", 0
	}
	defer unix.Close(dir)
	comm, start, ok := readStat(dir, buf)
	if !ok || start != ts.StartTime {
		return "", 0
	}
	n, err := readAt(dir, "status", buf)
	if err != nil {
		return comm, 0
	}
	_, rest, ok := bytes.Cut(buf[:n], []byte("\nTgid:\t"))
	if !ok {
		return comm, 0
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	tgid, err := strconv.ParseInt(string(line), 10, 32)
	if err != nil || tgid <= 0 {
		return comm, 0
	}
	return comm, int32(tgid)
}

// processNames returns the start time, comm and command line of process
// pid, each empty when unreadable.
func processNames(procRoot string, pid int32, buf []byte) (start uint64, comm, cmdline string, cut bool) {
	dir, err := unix.Open(filepath.Join(procRoot, strconv.Itoa(int(pid))), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, "", "", false
	}
	defer unix.Close(dir)
	comm, start, _ = readStat(dir, buf)
	cmd := make([]byte, MaxCmdline+1)
	n, err := readAt(dir, "cmdline", cmd)
	if err != nil {
		return start, comm, "", false
	}
	b := cmd[:n]
	if cut = n > MaxCmdline; cut {
		b = b[:MaxCmdline]
	} else {
		b = bytes.TrimRight(b, "\x00")
	}
	return start, comm, cgroupfs.LabelValue(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))), cut
}

// readStat reads the comm (as a label value) and the start time of the
// task of the /proc/<tid> directory dir.
func readStat(dir int, buf []byte) (string, uint64, bool) {
	n, err := readAt(dir, "stat", buf)
	if err != nil {
		return "", 0, false
	}
	b := buf[:n]
	start, err := schedstat.ParseStartTime(b)
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if err != nil || open < 0 || end < open {
		return "", 0, false
	}
	return cgroupfs.LabelValue(string(b[open+1 : end])), start, true
}

// readAt reads the start of the file name in the directory dir into buf.
func readAt(dir int, name string, buf []byte) (int, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	total := 0
	for total < len(buf) {
		n, err := unix.Read(fd, buf[total:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 {
			break
		}
		total += n
	}
	return total, nil
}

// PathOfLabel returns the cgroup path whose label value
// (cgroupfs.LabelValue) is s: a doubled backslash is one, \xNN the byte
// NN. A path starts with a slash.
func PathOfLabel(s string) (string, error) {
	if !strings.HasPrefix(s, "/") {
		return "", fmt.Errorf("path %q does not start with /: give the id label, such as /kubepods/burstable/pod<uid>/<container id>", s)
	}
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			b.WriteByte('\\')
			i++
		case i+3 < len(s) && s[i+1] == 'x':
			n, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
			if err != nil {
				return "", fmt.Errorf("path %q: bad escape %q", s, s[i:i+4])
			}
			b.WriteByte(byte(n))
			i += 3
		default:
			return "", fmt.Errorf("path %q: a lone backslash (a label doubles it)", s)
		}
	}
	return b.String(), nil
}
