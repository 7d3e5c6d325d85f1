package container_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedstat"
)

func TestExitRecordsCountOnceInEitherOrder(t *testing.T) {
	for _, tc := range []struct {
		name        string
		passFirst   bool // the pass finds the task gone before its record arrives
		wantExits   uint64
		wantTracked int
	}{
		{name: "record then pass", passFirst: false, wantExits: 1},
		{name: "pass then record", passFirst: true, wantExits: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, "/", "/a")
			r.table.TrackExits()
			task := r.spawn(4, 100, 10, 1)
			r.tree.Set("/a", 4)
			r.pass()
			final := stat(180, 14, 3)
			task.Stat = final
			r.k.Exit(4)
			r.tree.Set("/a")
			x := container.Exit{TID: 4, StartTime: task.Start, Final: final, Cgroup: "/a"}
			if tc.passFirst {
				r.pass()
				r.table.Exit(x)
			} else {
				r.table.Exit(x)
			}
			s := r.pass()
			if got := totalsOf(s)["/a"]; got != final {
				t.Errorf("/a = %+v, want the final counters %+v", got, final)
			}
			c := r.table.Counters()
			if c.Exits != tc.wantExits || c.Tracked != 0 || c.ExitEvents != 1 || r.k.Handles != 0 {
				t.Errorf("exits=%d tracked=%d events=%d handles=%d", c.Exits, c.Tracked, c.ExitEvents, r.k.Handles)
			}
		})
	}
}

func TestExitOfUnseenTask(t *testing.T) {
	r := newRig(t, "/", "/a", "/a/b")
	r.table.TrackExits()
	r.pass()
	// Born and dead between passes, in a known cgroup and in one made and
	// removed between passes.
	r.table.Exit(container.Exit{TID: 50, StartTime: 1, Final: stat(7, 1, 1), Cgroup: "/a/b"})
	r.table.Exit(container.Exit{TID: 51, StartTime: 2, Final: stat(9, 2, 1), Cgroup: "/a/gone/deeper"})
	s := r.pass()
	want := map[string]schedstat.Stat{"/": stat(16, 3, 2), "/a": stat(16, 3, 2), "/a/b": stat(7, 1, 1)}
	if diff := cmp.Diff(want, totalsOf(s)); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	if c := r.table.Counters(); c.UnattributedExits != 1 || c.ExitEvents != 2 {
		t.Errorf("unattributed=%d events=%d, want 1 2", c.UnattributedExits, c.ExitEvents)
	}
}

func TestExitRecordOfOlderTaskLeavesReusedIdAlone(t *testing.T) {
	r := newRig(t, "/", "/a")
	r.table.TrackExits()
	old := r.spawn(8, 100, 10, 1)
	r.tree.Set("/a", 8)
	r.pass()
	r.k.Exit(8)
	young := r.spawn(8, 5, 1, 1)
	r.pass() // retires the old task, starts the new one
	r.table.Exit(container.Exit{TID: 8, StartTime: old.Start, Final: stat(130, 12, 2), Cgroup: "/a"})
	young.Stat = stat(6, 1, 2)
	s := r.pass()
	if got, want := totalsOf(s)["/a"], stat(136, 13, 4); got != want {
		t.Errorf("/a = %+v, want %+v", got, want)
	}
	if c := r.table.Counters(); c.Tracked != 1 || c.Reuses != 1 {
		t.Errorf("tracked=%d reuses=%d, want 1 1", c.Tracked, c.Reuses)
	}
}
