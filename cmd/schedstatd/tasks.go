package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/collector"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/schedstat"
)

// tasksHandler serves collector.TasksPath: the processes and threads of
// the cgroup named by the query, after a fresh pass that it shares with
// the scrapes and requests that wait at the same time.
type tasksHandler struct {
	poller  *collector.Poller
	procfs  string
	threads threadReader
	logger  *slog.Logger
}

// threadReader reads, now, the threads of cgroups and their counters, and
// counts what it could not read though it was not gone, with the first
// such error.
type threadReader func(cgroups []container.CgroupRef) (tasks []container.TaskStats, unread int, first error)

// threadReader returns the reader of threads for a table of per-cgroup
// totals, which tracks none: each cgroup's threads file, then each
// thread's /proc/<tid>/schedstat under procRoot. It is nil without the
// kernel totals.
func (s *sources) threadReader(procRoot string) threadReader {
	if s.agg == nil {
		return nil
	}
	return func(cgroups []container.CgroupRef) ([]container.TaskStats, int, error) {
		return readThreads(s.hier.Dir(), s.hier.ThreadsFile(), procRoot, cgroups)
	}
}

// readThreads reads the threads of each cgroup, below dir, from its
// threadsFile, and each thread's counters and start time from procfs at
// procRoot. A cgroup removed or a thread gone since the pass is left out;
// any other failure leaves the list or the thread out too and is counted
// in unread, with the first error.
func readThreads(dir, threadsFile, procRoot string, cgroups []container.CgroupRef) (out []container.TaskStats, unread int, first error) {
	fail := func(err error) {
		unread++
		if first == nil {
			first = err
		}
	}
	var tids []int32
	for _, cg := range cgroups {
		b, err := os.ReadFile(filepath.Join(dir, cg.Path, threadsFile))
		if err == nil {
			tids, err = cgroupfs.ParseTIDs(b, tids[:0])
		}
		if err != nil {
			if !cgroupfs.IsRemoved(err) {
				fail(err)
			}
			continue
		}
		for _, tid := range tids {
			task, err := procsource.Open(procRoot, tid)
			if err == nil {
				var st schedstat.Stat
				st, err = task.Read()
				task.Close()
				if err == nil {
					out = append(out, container.TaskStats{TID: tid, StartTime: task.StartTime(), Stat: st, CgroupID: cg.ID, CgroupPath: cg.Path})
					continue
				}
			}
			if !schedstat.IsGone(err) {
				fail(fmt.Errorf("thread %d: %w", tid, err))
			}
		}
	}
	return out, unread, first
}

// tasksQuery is a parsed query: a kernel id, or a path (the id label).
type tasksQuery struct {
	id     uint64
	path   string
	byPath bool
}

// String names the cgroup asked for, for messages.
func (q tasksQuery) String() string {
	if q.byPath {
		return fmt.Sprintf("path %q", q.path)
	}
	return "id " + strconv.FormatUint(q.id, 10)
}

// parseTasksQuery takes exactly one of id (the cgroup's kernel id, the
// inode of its directory) and path (the metrics' id label).
func parseTasksQuery(r *http.Request) (tasksQuery, error) {
	v, err := urlQuery(r)
	if err != nil {
		return tasksQuery{}, err
	}
	for k := range v {
		if k != "id" && k != "path" {
			return tasksQuery{}, fmt.Errorf("unknown query parameter %q: give id=<cgroup inode> or path=<cgroup path>", k)
		}
		if len(v[k]) != 1 {
			return tasksQuery{}, fmt.Errorf("%s is given %d times", k, len(v[k]))
		}
	}
	ids, paths := v["id"], v["path"]
	switch {
	case len(ids) == 1 && len(paths) == 1:
		return tasksQuery{}, errors.New("give either id or path, not both")
	case len(ids) == 1:
		id, err := strconv.ParseUint(ids[0], 10, 64)
		if err != nil || id == 0 {
			return tasksQuery{}, fmt.Errorf("id %q is not a cgroup inode number", ids[0])
		}
		return tasksQuery{id: id}, nil
	case len(paths) == 1:
		p, err := collector.PathOfLabel(paths[0])
		if err != nil {
			return tasksQuery{}, err
		}
		return tasksQuery{path: p, byPath: true}, nil
	}
	return tasksQuery{}, errors.New("no cgroup given: give id=<cgroup inode> or path=<cgroup path, as the id label>")
}

// urlQuery parses the query, refusing one that does not parse rather than
// dropping its bad parts as URL.Query does.
func urlQuery(r *http.Request) (url.Values, error) {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("malformed query: %v", err)
	}
	return v, nil
}

// tasksWait is how long a request waits for its pass: the scrape timeout
// header's 90 %, as for a scrape, else maxPassWait.
func tasksWait(r *http.Request) time.Duration {
	wait := maxPassWait
	if s := r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds"); s != "" {
		if sec, err := strconv.ParseFloat(s, 64); err == nil && sec > 0 {
			wait = min(wait, time.Duration(sec*float64(time.Second)*0.9))
		}
	}
	return wait
}

// ServeHTTP answers 400 to a malformed query, 404 when the pass does not
// have the cgroup, 503 when no pass finished in time, and the tasks as JSON
// (collector.CgroupTasks) otherwise.
func (h *tasksHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q, err := parseTasksQuery(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var (
		path    string
		id      = q.id
		tasks   []container.TaskStats
		cgroups []container.CgroupRef
		tracks  bool
		found   bool
	)
	ctx, cancel := context.WithTimeout(r.Context(), tasksWait(r))
	s, err := h.poller.FreshView(ctx, func(t *container.Table) {
		if q.byPath {
			if id, found = t.CgroupID(q.path); !found {
				return
			}
		}
		if tracks = t.TracksTasks(); tracks {
			path, tasks, found = t.CgroupTasks(id, nil)
		} else {
			path, cgroups, found = t.CgroupSubtree(id, nil)
		}
	})
	cancel()
	if err != nil {
		http.Error(w, fmt.Sprintf("no pass finished in time to read the tasks: %v", err), http.StatusServiceUnavailable)
		return
	}
	if !found {
		http.Error(w, fmt.Sprintf("no cgroup with %s in the pass of %s", q, s.Time.Format("15:04:05.000")), http.StatusNotFound)
		return
	}
	at := s.Time
	var unread int
	var unreadErr error
	if !tracks && h.threads != nil {
		// The kernel totals keep no task: their threads are read now,
		// outside the pass, from the cgroups it listed, and the answer
		// is of now.
		at = time.Now()
		tasks, unread, unreadErr = h.threads(cgroups)
	}
	out := collector.NewCgroupTasks(h.procfs, id, path, at, tasks)
	if out.Unread = unread; unreadErr != nil {
		out.UnreadError = unreadErr.Error()
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		h.logger.Debug("tasks answer not sent whole", "err", err)
	}
}
