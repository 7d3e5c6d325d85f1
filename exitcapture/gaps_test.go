//go:build knowngaps

// The tests in this file pin gaps known on main; they fail until the gap
// is closed and are left out of `make test` until then. Run them with
// `make test-known-gaps`.

package exitcapture

import (
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// TestGapFreeHookEveryThread runs 3,000 threads of 4 ms in a cgroup of the
// walked hierarchy, once per hook, and requires a record for every one of
// them. On Linux 6.18 here sched_switch brought every record in every run,
// and sched_process_free none for 3 to 7 of 1,500 threads in half the runs
// (a few threads started close together each time), with no record lost
// to the ring and no recursion miss of the program: their run time, 0.1 to
// 0.3% of such a cgroup's, is lost. The cause is not known yet.
func TestGapFreeHookEveryThread(t *testing.T) {
	for _, hook := range []Hook{HookSwitch, HookFree} {
		t.Run(hook.String(), func(t *testing.T) {
			dir := testcg.Make(t, walked)
			s := openSource(t, Options{Hook: hook})
			got := map[int32]bool{}
			record := func(x container.Exit) { got[x.TID] = true }
			h := testproc.StartShortLived(t, "threads 3000 4ms 4", dir)
			for !h.Exited() {
				time.Sleep(20 * time.Millisecond)
				s.Drain(record)
			}
			tids := h.Wait(t, time.Minute)
			feedUntilMarker(t, s, record)
			var missing []int32
			for _, tid := range tids {
				if !got[tid] {
					missing = append(missing, tid)
				}
			}
			st, _ := s.coll.Programs[progName].Stats()
			t.Logf("%v: %d threads, %d without a record %v; source %+v; recursion misses %d", hook, len(tids), len(missing), missing, s.Stats(), st.RecursionMisses)
			if len(missing) > 0 {
				t.Errorf("%d of %d threads have no exit record", len(missing), len(tids))
			}
		})
	}
}
