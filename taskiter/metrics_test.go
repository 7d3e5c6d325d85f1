package taskiter_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/schedstatd/schedstatd/taskiter"
)

// TestCollectorProcfs checks the self metrics when the procfs source is in
// use, and lints them.
func TestCollectorProcfs(t *testing.T) {
	c := taskiter.NewCollector(nil)
	want := `
# HELP schedstatd_task_source 1 for the task source in use: aggregate (per-cgroup totals kept in the kernel by a BPF task iterator), iter (one BPF task iterator read per pass) or procfs (cgroup thread lists and a read per task).
# TYPE schedstatd_task_source gauge
schedstatd_task_source{source="aggregate"} 0
schedstatd_task_source{source="iter"} 0
schedstatd_task_source{source="procfs"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "schedstatd_task_source"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) != 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// TestCollectorIter checks that the iterator's counts show once it reads.
func TestCollectorIter(t *testing.T) {
	_, s := open(t, "")
	if err := s.Read(); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP schedstatd_task_iterator_reads_total Completed reads of the BPF task iterator, one per pass.
# TYPE schedstatd_task_iterator_reads_total counter
schedstatd_task_iterator_reads_total 1
# HELP schedstatd_task_source 1 for the task source in use: aggregate (per-cgroup totals kept in the kernel by a BPF task iterator), iter (one BPF task iterator read per pass) or procfs (cgroup thread lists and a read per task).
# TYPE schedstatd_task_source gauge
schedstatd_task_source{source="aggregate"} 0
schedstatd_task_source{source="iter"} 1
schedstatd_task_source{source="procfs"} 0
`
	c := taskiter.NewCollector(s)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "schedstatd_task_iterator_reads_total", "schedstatd_task_source"); err != nil {
		t.Error(err)
	}
	if st := s.Stats(); st.Tasks < 10 {
		t.Errorf("Stats().Tasks = %d, want the node's tasks", st.Tasks)
	}
}
