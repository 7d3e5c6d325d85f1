package exitcapture

import (
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/churn"
	"github.com/schedstatd/schedstatd/internal/testcg"
)

// TestCoverageShortTasks is the case polling cannot see: 1,500 threads of
// 4 ms and 200 processes of about 10 ms, in a cgroup of the v1 cpuacct
// hierarchy (walked, as the daemon does on this node by default) and its
// v2 twin (whose id the records carry), with a pass every second. With
// exit capture the cgroup's run time must reach 99.5% of its own CPU
// counter; the polling-only figure of the same run is printed.
func TestCoverageShortTasks(t *testing.T) {
	v1, v2, rel := twin(t)
	s := openSource(t, Options{})
	p := newPair(t, s, "cpuacct")
	p.pass(t)
	stop := p.every(t, time.Second)
	defer func() {
		if stop != nil {
			stop()
		}
	}()

	// Both helpers run at once; their ids come back after both exit.
	helpers := []*churn.Proc{
		churn.Start(t, "threads 1500 4ms 4", v1, v2),
		churn.Start(t, "procs 200 10ms 2", v1, v2),
	}
	threads := helpers[0].Wait(t, 90*time.Second)
	helpers[1].Wait(t, 90*time.Second)
	stop()
	stop = nil
	p.settle(t)
	p.pass(t)

	usage := testcg.Usage(t, v1)
	captured, polled := run(t, p.capture, rel), run(t, p.polls, rel)
	st := s.Stats()
	c := p.capture.Counters()
	t.Logf("cpuacct.usage %.3fs; with exit capture %.3fs (coverage %.4f); polling only %.3fs (coverage %.4f)",
		float64(usage)/1e9, float64(captured)/1e9, float64(captured)/float64(usage),
		float64(polled)/1e9, float64(polled)/float64(usage))
	t.Logf("threads run: %d; source %+v; table exit events %d, unattributed %d, exits seen by passes %d",
		len(threads), st, c.ExitEvents, c.UnattributedExits, c.Exits)
	if len(threads) != 1500 {
		t.Errorf("the helper ran %d threads, want 1500", len(threads))
	}
	if float64(captured) < 0.995*float64(usage) {
		t.Errorf("with exit capture the cgroup ran %d ns, below 99.5%% of its CPU counter %d ns", captured, usage)
	}
	// Other tasks on the node share the ring, so a lost record need not be
	// one of this cgroup's; the coverage above is what tells.
	if st.Lost != 0 {
		t.Logf("%d records lost", st.Lost)
	}
}
