package main

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/aggregate"
	"github.com/schedstatd/schedstatd/internal/testkit/testbpf"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// TestStateAcrossSourceChange restarts the daemon over one state file
// with the source changing each time, as auto's choice changes when a
// node gains or loses the host's bpffs or the kernel totals stop loading:
// the task iterator, the kernel totals, the iterator again. Every restart
// restores the state, and no series of the test's cgroup falls.
func TestStateAcrossSourceChange(t *testing.T) {
	if err := aggregate.KernelSupports(); err != nil {
		t.Skipf("--collect.source=aggregate: %v (aggregate TestSelect)", err)
	}
	cg := testcg.Make(t, "cpuacct")
	id := "/" + filepath.Base(cg)
	testproc.StartIn(t, 1, cg)
	testproc.StartChurnIn(t, cg)
	dir := t.TempDir()
	pins := filepath.Join(testbpf.Mount(t), "pins")
	bin := plainBinary(t)
	last := map[string]float64{}
	for i, source := range []string{"iter", "aggregate", "iter"} {
		d := startBinary(t, bin, nil, append(stateFlags(dir), "--collect.source="+source, "--bpf.pin-path="+pins)...)
		time.Sleep(2 * time.Second)
		mfs := scrape(t, http.DefaultClient, "http://"+d.addr+"/metrics")
		if got := selfMetric(mfs, "schedstatd_task_source", source); got != 1 {
			t.Fatalf("restart %d: schedstatd_task_source{source=%q} = %v", i, source, got)
		}
		if i > 0 && selfMetric(mfs, "schedstatd_state_restore", "restored") != 1 {
			t.Errorf("restart %d (%s): the state was not restored:\n%s", i, source, d.log())
		}
		now := counters(mfs, id)
		if len(now) == 0 {
			t.Fatalf("restart %d (%s): no series of %s", i, source, id)
		}
		for _, f := range fallen(last, now) {
			t.Errorf("restart %d (%s): %s", i, source, f)
		}
		last = now
		d.stop(t)
	}
}
