package top

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/schedstatd/schedstatd/collector"
)

// Target is what a drilled-down view shows: the processes of a row's
// cgroups, or the threads of one of those processes.
type Target struct {
	// IDs are the cgroups, as the id label has them or by kernel id.
	IDs []string
	// Label names the row opened, for the header.
	Label string
	// Threads is set for the threads of the process PID that started at
	// Start (clock ticks since boot).
	Threads bool
	PID     int32
	Start   uint64
}

// View returns the view of the target's rows.
func (t *Target) View() View {
	if t.Threads {
		return ViewThreads
	}
	return ViewProcesses
}

type taskKey struct {
	id    int32
	start uint64
}

// taskObs is one thread of a TaskSample, for rates.
type taskObs struct {
	th  collector.Thread
	at  float64 // the answer's time, Unix seconds
	pid taskKey
}

// TaskRows returns one row per process of cur, and of prev's processes
// that are gone, each with its thread rows in Threads. A thread's rates
// are its increase since prev over the time between the two answers of
// its cgroup; a thread new in cur has none (Known false); a process's
// rates sum its threads' that have one. Threads and processes of prev
// missing from cur are rows marked Exited, without rates. Identity is the
// id and the start time: a reused id is a new task.
func TaskRows(prev, cur TaskSample) []Row {
	before := observe(prev)
	procs := map[taskKey]*Row{}
	var order []taskKey
	seen := map[taskKey]bool{}
	row := func(k taskKey, p collector.Process) *Row {
		r := procs[k]
		if r == nil {
			r = &Row{
				Label: processLabel(p.PID, p.Comm, p.Cmdline), PID: p.PID, Start: p.StartTicks,
				Comm: p.Comm, Cmdline: p.Cmdline,
			}
			procs[k] = r
			order = append(order, k)
		}
		return r
	}
	for _, part := range cur {
		at := float64(part.Time.UnixNano()) / 1e9
		for _, p := range part.Processes {
			pk := taskKey{p.PID, p.StartTicks}
			r := row(pk, p)
			for _, th := range p.Threads {
				k := taskKey{th.TID, th.StartTicks}
				if seen[k] {
					continue
				}
				seen[k] = true
				tr := threadRow(th, p.PID)
				if b, ok := before[k]; ok && at > b.at {
					sec := at - b.at
					tr.Known = true
					tr.Run = increase(float64(b.th.RunNanoseconds), float64(th.RunNanoseconds)) / nsPerSecond / sec
					tr.Wait = increase(float64(b.th.RunqueueNanoseconds), float64(th.RunqueueNanoseconds)) / nsPerSecond / sec
					tr.Timeslices = increase(float64(b.th.Timeslices), float64(th.Timeslices)) / sec
					r.Known = true
					r.Run += tr.Run
					r.Wait += tr.Wait
					r.Timeslices += tr.Timeslices
				}
				r.Tasks++
				r.Threads = append(r.Threads, tr)
				if !slices.Contains(r.IDs, th.Cgroup) {
					r.IDs = append(r.IDs, th.Cgroup)
				}
			}
		}
	}
	// What left since prev: shown once more, marked.
	for _, part := range prev {
		for _, p := range part.Processes {
			pk := taskKey{p.PID, p.StartTicks}
			for _, th := range p.Threads {
				k := taskKey{th.TID, th.StartTicks}
				if seen[k] {
					continue
				}
				seen[k] = true
				r, alive := procs[pk]
				if !alive {
					r = row(pk, p)
					r.Exited = true
				}
				tr := threadRow(th, p.PID)
				tr.Exited = true
				r.Threads = append(r.Threads, tr)
			}
		}
	}
	rows := make([]Row, 0, len(order))
	for _, k := range order {
		rows = append(rows, *procs[k])
	}
	return rows
}

// observe indexes the threads of s by identity.
func observe(s TaskSample) map[taskKey]taskObs {
	m := map[taskKey]taskObs{}
	for _, part := range s {
		at := float64(part.Time.UnixNano()) / 1e9
		for _, p := range part.Processes {
			for _, th := range p.Threads {
				m[taskKey{th.TID, th.StartTicks}] = taskObs{th: th, at: at, pid: taskKey{p.PID, p.StartTicks}}
			}
		}
	}
	return m
}

// threadRow returns the row of thread th of process pid, without rates.
func threadRow(th collector.Thread, pid int32) Row {
	name := th.Comm
	if name == "" {
		name = "?"
	}
	return Row{
		Label: strconv.Itoa(int(th.TID)) + " " + name, IDs: []string{th.Cgroup},
		PID: pid, TID: th.TID, Start: th.StartTicks, Comm: th.Comm, Tasks: 1,
	}
}

// processLabel is what a process row shows: its id and command line, or
// its name in brackets when it has none (a kernel thread, a zombie), as
// ps shows them.
func processLabel(pid int32, comm, cmdline string) string {
	switch {
	case pid == 0:
		return "? (exited before it was named)"
	case cmdline != "":
		return fmt.Sprintf("%d %s", pid, cmdline)
	case comm != "":
		return fmt.Sprintf("%d [%s]", pid, comm)
	}
	return fmt.Sprintf("%d ?", pid)
}

// named gives a target opened by kernel id the path its answer has.
func named(t *Target, ts TaskSample) {
	if t != nil && !t.Threads && len(ts) == 1 && len(t.IDs) == 1 && t.Label == t.IDs[0] && isKernelID(t.Label) {
		t.Label = ts[0].Path + " (id " + t.Label + ")"
	}
}

// ThreadsOf returns the thread rows of the process row with the given id
// and start time among rows (from TaskRows), and whether it is there.
func ThreadsOf(rows []Row, pid int32, start uint64) ([]Row, bool) {
	for _, r := range rows {
		if r.PID == pid && r.Start == start && r.TID == 0 {
			return r.Threads, true
		}
	}
	return nil, false
}

// carry gives the rows marked Exited the rates they had in last, the rows
// shown before, so a task that exits while shown stays, marked, with what
// it did last.
func carry(rows, last []Row) {
	if len(last) == 0 {
		return
	}
	byKey := make(map[string]Row, len(last))
	for _, r := range last {
		byKey[r.Key()] = r
	}
	for i := range rows {
		r := &rows[i]
		if !r.Exited {
			continue
		}
		if l, ok := byKey[r.Key()]; ok && !l.Exited && l.Known {
			r.Known, r.Run, r.Wait, r.Timeslices = true, l.Run, l.Wait, l.Timeslices
		}
	}
}

// total sums rows (not Exited) into the line above a drilled-down table.
func total(label string, rows []Row) Row {
	t := Row{Label: label}
	for _, r := range rows {
		if r.Exited {
			continue
		}
		t.Tasks += r.Tasks
		if !r.Known {
			continue
		}
		t.Known = true
		t.Run += r.Run
		t.Wait += r.Wait
		t.Timeslices += r.Timeslices
	}
	return t
}
