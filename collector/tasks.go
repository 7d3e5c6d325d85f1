package collector

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/container"
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
	// Time is when the pass the counters come from ended.
	Time time.Time `json:"time"`
	// Processes are in order of PID, each with its threads in the cgroup
	// or its descendants.
	Processes []Process `json:"processes"`
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

// NewCgroupTasks names the tasks of the cgroup of kernel id id at path,
// as a pass that ended at at left them, reading their names from the
// procfs mounted at procRoot. A task whose start time there differs from
// the one it was counted with is another task with the same id: it is
// not named after it. Only the given tasks' files are read, from the
// caller's goroutine.
func NewCgroupTasks(procRoot string, id uint64, path string, at time.Time, tasks []container.TaskStats) *CgroupTasks {
	out := &CgroupTasks{ID: id, Path: cgroupfs.LabelValue(path), Time: at, Processes: []Process{}}
	fs, err := procfs.NewFS(procRoot)
	byPID := map[int32]int{}
	for _, ts := range tasks {
		th := Thread{
			TID: ts.TID, StartTicks: ts.StartTime, Cgroup: cgroupfs.LabelValue(ts.CgroupPath),
			RunNanoseconds: ts.Stat.RunNanoseconds, RunqueueNanoseconds: ts.Stat.WaitNanoseconds, Timeslices: ts.Stat.Timeslices,
		}
		var pid int32
		if err == nil {
			th.Comm, pid = threadNames(fs, ts)
		}
		i, ok := byPID[pid]
		if !ok {
			i = len(out.Processes)
			byPID[pid] = i
			p := Process{PID: pid}
			if pid != 0 {
				p.StartTicks, p.Comm, p.Cmdline, p.CmdlineTruncated = processNames(fs, procRoot, pid)
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

// threadNames returns the comm and the process id of the task ts, or
// nothing when it is gone or its id now belongs to another task.
func threadNames(fs procfs.FS, ts container.TaskStats) (string, int32) {
	p, err := fs.Proc(int(ts.TID))
	if err != nil {
		return "", 0
	}
	st, err := p.Stat()
	if err != nil || st.Starttime != ts.StartTime {
		return "", 0
	}
	status, err := p.NewStatus()
	if err != nil || status.TGID <= 0 {
		return cgroupfs.LabelValue(st.Comm), 0
	}
	// Read again: the id may have been reaped and taken between the two
	// reads, and status would be the new task's.
	if again, err := p.Stat(); err != nil || again.Starttime != ts.StartTime {
		return "", 0
	}
	return cgroupfs.LabelValue(st.Comm), int32(status.TGID)
}

// processNames returns the start time, comm and command line of process
// pid, each empty when unreadable.
func processNames(fs procfs.FS, procRoot string, pid int32) (start uint64, comm, cmdline string, cut bool) {
	if p, err := fs.Proc(int(pid)); err == nil {
		if st, err := p.Stat(); err == nil {
			start, comm = st.Starttime, cgroupfs.LabelValue(st.Comm)
		}
	}
	cmdline, cut, _ = readCmdline(filepath.Join(procRoot, strconv.Itoa(int(pid)), "cmdline"))
	return start, comm, cgroupfs.LabelValue(cmdline), cut
}

// readCmdline reads at most MaxCmdline bytes of a cmdline file, its
// arguments joined by spaces, and whether there was more.
func readCmdline(name string) (string, bool, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	buf := make([]byte, MaxCmdline+1)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", false, err
	}
	b := buf[:n]
	cut := n > MaxCmdline
	if cut {
		b = b[:MaxCmdline]
	} else {
		b = bytes.TrimRight(b, "\x00")
	}
	return string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})), cut, nil
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
