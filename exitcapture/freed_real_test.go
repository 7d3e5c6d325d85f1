package exitcapture

import (
	"os/exec"
	"testing"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// TestAwaitFreesOrders holds the wait every settling test here relies on:
// once the markers' frees are read, so is the free of every task reaped
// before, on any CPU. On kernels without rcutree.do_rcu_barrier (before
// 6.3) this is the order of RCU callbacks on each CPU; on later ones, the
// barrier.
func TestAwaitFreesOrders(t *testing.T) {
	s := openSource(t, Options{Hook: HookFree})
	want := map[int32]bool{}
	for range 200 {
		cmd := exec.Command("/bin/true")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		want[int32(cmd.Process.Pid)] = true
	}
	testproc.AwaitFrees(t, func(freed func(int32)) {
		s.Drain(func(x container.Exit) {
			delete(want, x.TID)
			freed(x.TID)
		})
	})
	if len(want) > 0 {
		t.Errorf("%d of 200 processes reaped before the wait have no record after it", len(want))
	}
}
