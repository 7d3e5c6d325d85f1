package container_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/schedstat"
)

// countingOpener counts the reads of every handle it opens, by thread id.
type countingOpener struct {
	container.TaskOpener
	reads map[int32]int
}

type countingHandle struct {
	container.TaskHandle
	tid   int32
	reads map[int32]int
}

func (o *countingOpener) Open(tid int32) (container.TaskHandle, error) {
	h, err := o.TaskOpener.Open(tid)
	if err != nil {
		return nil, err
	}
	return &countingHandle{TaskHandle: h, tid: tid, reads: o.reads}, nil
}

func (h *countingHandle) Read() (schedstat.Stat, error) {
	h.reads[h.tid]++
	return h.TaskHandle.Read()
}

// TestRealTreeRollsUp walks a real nested cgroup tree with the cgroupfs
// walker: each cgroup gets the sum of its descendants' threads, each
// thread is read once per pass, and the sums agree with the kernel's own
// counters.
func TestRealTreeRollsUp(t *testing.T) {
	for _, hierarchy := range []string{"cpuacct", "unified"} {
		t.Run(hierarchy, func(t *testing.T) {
			forEachSource(t, hierarchy, func(t *testing.T, src taskSource) {
				top := testcg.Make(t, hierarchy)
				a, ab, c := filepath.Join(top, "a"), filepath.Join(top, "a", "b"), filepath.Join(top, "c")
				for _, d := range []string{a, ab, c} {
					if err := os.Mkdir(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				procs := map[string]*testproc.Proc{
					ab: testproc.StartIn(t, 3, ab),
					a:  testproc.StartIn(t, 2, a),
					c:  testproc.StartIn(t, 1, c),
				}
				opener := &countingOpener{TaskOpener: src.opener, reads: map[int32]int{}}
				table := container.NewTable(src.lister, opener)
				defer table.Close()
				// A baseline with every thread stopped, so the kernel's counters
				// and the sums can be compared as increases: the shells' time
				// before they moved themselves in is in the sums, not in the
				// cgroups' counters.
				for _, p := range procs {
					p.Stop(t)
				}
				if err := table.Pass(); err != nil {
					t.Fatal(err)
				}
				base := table.Snapshot()
				for _, p := range procs {
					p.Cont(t)
				}
				time.Sleep(500 * time.Millisecond)
				for _, p := range procs {
					p.Stop(t)
				}
				clear(opener.reads)
				if err := table.Pass(); err != nil {
					t.Fatal(err)
				}
				s := table.Snapshot()

				own := map[string]schedstat.Stat{}
				for dir, p := range procs {
					own[dir] = sumStats(t, p)
					for _, tid := range p.Threads(t) {
						if n := opener.reads[tid]; n != 1 {
							t.Errorf("thread %d in %s read %d times in one pass, want 1", tid, dir, n)
						}
					}
				}
				want := map[string]schedstat.Stat{
					ab:  own[ab],
					a:   own[a].Add(own[ab]),
					c:   own[c],
					top: own[a].Add(own[ab]).Add(own[c]),
				}
				for dir, w := range want {
					path := "/" + mustRel(t, testcg.Dir(hierarchy), dir)
					got, ok := s.Lookup(path)
					if !ok {
						t.Fatalf("no %s in the snapshot", path)
					}
					if got.Stat != w {
						t.Errorf("%s = %+v, want the sum of its threads and descendants' %+v", path, got.Stat, w)
					}
					before, _ := base.Lookup(path)
					ran, counted := got.Stat.RunNanoseconds-before.Stat.RunNanoseconds, got.UsageNanoseconds-before.UsageNanoseconds
					if !got.HasUsage || !within(ran, counted, 0.001) {
						t.Errorf("%s ran %d ns by schedstat while its own counter rose %d ns", path, ran, counted)
					}
					if kernel := testcg.Usage(t, dir); got.UsageNanoseconds != kernel {
						t.Errorf("%s: exported usage %d ns, the kernel file says %d ns", path, got.UsageNanoseconds, kernel)
					}
				}
				if c := table.Counters(); c.Duplicates != 0 {
					t.Errorf("%d threads listed twice", c.Duplicates)
				}
			})
		})
	}
}

func mustRel(t *testing.T, base, target string) string {
	t.Helper()
	r, err := filepath.Rel(base, target)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
