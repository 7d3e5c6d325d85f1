package top

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/schedstatd/schedstatd/collector"
)

// ErrUnknownCgroup means the cgroup asked for is not in the daemon's (or
// this process's) last pass.
var ErrUnknownCgroup = errors.New("no such cgroup")

// TaskSource gives the processes and threads of one cgroup and its
// descendants. cgroup is its kernel id in decimal, or its path as the id
// label has it. It is called from the goroutine that calls Sample.
type TaskSource interface {
	Tasks(ctx context.Context, cgroup string) (*collector.CgroupTasks, error)
}

// TaskSample is the tasks of the cgroups of one row, one answer each.
type TaskSample []*collector.CgroupTasks

// sampleTasks asks src for every cgroup of ids.
func sampleTasks(ctx context.Context, src Source, ids []string) (TaskSample, error) {
	ts, ok := src.(TaskSource)
	if !ok {
		return nil, errors.New("this source has no tasks")
	}
	out := make(TaskSample, 0, len(ids))
	for _, id := range ids {
		t, err := ts.Tasks(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// isKernelID reports whether cgroup names a cgroup by kernel id rather
// than by path.
func isKernelID(cgroup string) bool {
	_, err := strconv.ParseUint(cgroup, 10, 64)
	return err == nil
}

// TasksURL returns the daemon's tasks API URL for cgroup, beside the
// metrics URL.
func (h *HTTPSource) TasksURL(cgroup string) *url.URL {
	u := *h.URL
	u.Path, u.RawPath = collector.TasksPath, ""
	q := url.Values{}
	if isKernelID(cgroup) {
		q.Set("id", cgroup)
	} else {
		q.Set("path", cgroup)
	}
	u.RawQuery = q.Encode()
	return &u
}

// Tasks implements TaskSource with the daemon's tasks API.
func (h *HTTPSource) Tasks(ctx context.Context, cgroup string) (*collector.CgroupTasks, error) {
	u := h.TasksURL(cgroup)
	where := u.Redacted()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if t := h.Client.Timeout; t > 0 {
		req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat((t/2).Seconds(), 'f', -1, 64))
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, unreachable(where, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		// The daemon's one line, or a daemon without the tasks API.
		line, _ := bufio.NewReader(io.LimitReader(resp.Body, 512)).ReadString('\n')
		return nil, fmt.Errorf("%w %s: %s answered %s: %s", ErrUnknownCgroup, cgroup, where, resp.Status, strings.TrimSpace(line))
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		// Its pass did not finish in time: a daemon just started on a
		// node of many threads, or one slower than asked.
		line, _ := bufio.NewReader(io.LimitReader(resp.Body, 512)).ReadString('\n')
		return nil, fmt.Errorf("%w: %s answered %s: %s", ErrNotReady, where, resp.Status, strings.TrimSpace(line))
	}
	if err := checkStatus(where, resp); err != nil {
		return nil, err
	}
	var out collector.CgroupTasks
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&out); err != nil {
		return nil, fmt.Errorf("%s: not the tasks API's answer: %v", where, err)
	}
	return &out, nil
}

// Tasks implements TaskSource: it runs one pass and reads the names of the
// cgroup's tasks.
func (l *LocalSource) Tasks(ctx context.Context, cgroup string) (*collector.CgroupTasks, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := l.Table.Pass(); err != nil {
		return nil, fmt.Errorf("reading the cgroups under %s: %w", l.Dir, err)
	}
	snap := l.Table.Snapshot()
	var id uint64
	if isKernelID(cgroup) {
		id, _ = strconv.ParseUint(cgroup, 10, 64)
	} else {
		p, err := collector.PathOfLabel(cgroup)
		if err != nil {
			return nil, err
		}
		var ok bool
		if id, ok = l.Table.CgroupID(p); !ok {
			return nil, fmt.Errorf("%w %s under %s", ErrUnknownCgroup, cgroup, l.Dir)
		}
	}
	path, tasks, ok := l.Table.CgroupTasks(id, nil)
	if !ok {
		return nil, fmt.Errorf("%w %s under %s", ErrUnknownCgroup, cgroup, l.Dir)
	}
	return collector.NewCgroupTasks(l.procRoot(), id, path, snap.Time, tasks), nil
}

// procRoot is where the names of tasks are read.
func (l *LocalSource) procRoot() string {
	if l.Proc == "" {
		return "/proc"
	}
	return l.Proc
}
