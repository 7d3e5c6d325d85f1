package container_test

import (
	"testing"

	"github.com/schedstatd/schedstatd/container"
	"github.com/schedstatd/schedstatd/schedstat"
)

// moveOf is the record of task tid's move from the cgroup at from (""
// when the source cannot name it) to the one at to, with counters at.
func (r *rig) moveOf(tid int32, start uint64, at schedstat.Stat, from, to string) container.Migration {
	m := container.Migration{TID: tid, StartTime: start, At: at}
	if from != "" {
		x := r.exitOf(tid, start, at, from)
		m.From, m.FromAncestors = x.Cgroup, x.Ancestors
	}
	x := r.exitOf(tid, start, at, to)
	m.To, m.ToAncestors = x.Cgroup, x.Ancestors
	return m
}

// TestMigrationsSplitAtTheMove: a task's counters up to a move go to the
// cgroup it left and only its increase since to the one it joined, whether
// a pass tracked it before the move or first sees it after; a task never
// seen before its exit splits the same way; each stretch counts once.
func TestMigrationsSplitAtTheMove(t *testing.T) {
	t.Run("tracked", func(t *testing.T) {
		r := newRig(t, "/", "/a", "/b")
		task := r.spawn(4, 100, 10, 1)
		r.tree.Set("/a", 4)
		r.pass()
		at := stat(250, 20, 3)
		task.Stat = stat(400, 25, 5)
		r.tree.Set("/a")
		r.tree.Set("/b", 4)
		r.table.Migrate(r.moveOf(4, task.Start, at, "/a", "/b"))
		got := totalsOf(r.pass())
		if got["/a"] != at || got["/b"] != stat(150, 5, 2) {
			t.Errorf("/a %+v /b %+v: want /a up to the move %+v, /b the rest {150 5 2}", got["/a"], got["/b"], at)
		}
	})
	t.Run("first seen after the move", func(t *testing.T) {
		r := newRig(t, "/", "/shim", "/pod", "/pod/ctr")
		r.pass()
		task := r.spawn(7, 0, 0, 0)
		at := stat(1900, 300, 4)
		task.Stat = stat(5000, 400, 9)
		r.tree.Set("/pod/ctr", 7)
		r.table.Migrate(r.moveOf(7, task.Start, at, "/shim", "/pod/ctr"))
		got := totalsOf(r.pass())
		if got["/shim"] != at || got["/pod/ctr"] != stat(3100, 100, 5) || got["/pod"] != got["/pod/ctr"] {
			t.Errorf("/shim %+v /pod %+v /pod/ctr %+v: want the shim's stretch %+v there and {3100 100 5} in the container", got["/shim"], got["/pod"], got["/pod/ctr"], at)
		}
		if got["/"] != task.Stat {
			t.Errorf("/ = %+v, want the task once: %+v", got["/"], task.Stat)
		}
	})
	t.Run("source unknown goes to the root", func(t *testing.T) {
		r := newRig(t, "/", "/pod")
		r.pass()
		task := r.spawn(7, 0, 0, 0)
		task.Stat = stat(5000, 400, 9)
		r.tree.Set("/pod", 7)
		r.table.Migrate(r.moveOf(7, task.Start, stat(1900, 300, 4), "", "/pod"))
		got := totalsOf(r.pass())
		if got["/pod"] != stat(3100, 100, 5) || got["/"] != task.Stat {
			t.Errorf("/pod %+v / %+v: want {3100 100 5} and the whole task once", got["/pod"], got["/"])
		}
		if c := r.table.Counters(); c.UnattributedMigrations != 1 || c.MovedTasks != 0 {
			t.Errorf("unattributed %d, moved tasks %d: want 1 and 0", c.UnattributedMigrations, c.MovedTasks)
		}
	})
	t.Run("exits unseen after two moves, into a cgroup no pass listed", func(t *testing.T) {
		r := newRig(t, "/", "/shim", "/pod")
		r.pass()
		r.tree.Mkdir("/pod/ctr")
		task := r.spawn(9, 0, 0, 0)
		at1, at2, final := stat(100, 10, 1), stat(300, 15, 2), stat(1000, 40, 6)
		r.table.Migrate(r.moveOf(9, task.Start, at1, "/shim", "/pod"))
		r.table.Migrate(r.moveOf(9, task.Start, at2, "/pod", "/pod/ctr"))
		r.k.Exit(9)
		r.table.Exit(r.exitOf(9, task.Start, final, "/pod/ctr"))
		got := totalsOf(r.pass())
		if got["/shim"] != at1 || got["/pod/ctr"] != final.Since(at2) || got["/pod"] != final.Since(at1) || got["/"] != final {
			t.Errorf("/shim %+v /pod %+v /pod/ctr %+v /: %+v: want %+v, %+v, %+v and %+v", got["/shim"], got["/pod"], got["/pod/ctr"], got["/"],
				at1, final.Since(at1), final.Since(at2), final)
		}
	})
	t.Run("tracked, exits in a cgroup no pass listed", func(t *testing.T) {
		r := newRig(t, "/", "/a")
		task := r.spawn(4, 100, 10, 1)
		r.tree.Set("/a", 4)
		r.pass()
		r.tree.Mkdir("/c")
		at, final := stat(250, 20, 3), stat(400, 25, 5)
		r.table.Migrate(r.moveOf(4, task.Start, at, "/a", "/c"))
		task.Stat = final
		r.k.Exit(4)
		r.tree.Set("/a")
		r.table.Exit(r.exitOf(4, task.Start, final, "/c"))
		got := totalsOf(r.pass())
		if got["/a"] != at || got["/c"] != final.Since(at) {
			t.Errorf("/a %+v /c %+v: want %+v up to the move and the rest %+v in /c", got["/a"], got["/c"], at, final.Since(at))
		}
	})
	t.Run("a record older than the pass's read changes nothing", func(t *testing.T) {
		r := newRig(t, "/", "/a", "/b")
		task := r.spawn(4, 100, 10, 1)
		r.tree.Set("/a", 4)
		r.pass()
		task.Stat = stat(400, 25, 5)
		r.tree.Set("/a")
		r.tree.Set("/b", 4)
		r.pass() // read after the move, before its record came
		r.table.Migrate(r.moveOf(4, task.Start, stat(250, 20, 3), "/a", "/b"))
		got := totalsOf(r.pass())
		if got["/a"] != stat(100, 10, 1) || got["/b"] != stat(300, 15, 4) {
			t.Errorf("/a %+v /b %+v: want what the passes counted, unchanged", got["/a"], got["/b"])
		}
		if c := r.table.Counters(); c.StaleMigrations != 1 {
			t.Errorf("stale migrations %d, want 1", c.StaleMigrations)
		}
	})
	t.Run("another task on the id", func(t *testing.T) {
		r := newRig(t, "/", "/a", "/b")
		r.pass()
		task := r.spawn(4, 0, 0, 0)
		task.Stat = stat(500, 50, 5)
		r.tree.Set("/b", 4)
		r.table.Migrate(r.moveOf(4, task.Start+1000, stat(200, 20, 2), "/a", "/b"))
		got := totalsOf(r.pass())
		if got["/a"] != (schedstat.Stat{}) || got["/b"] != task.Stat {
			t.Errorf("/a %+v /b %+v: a record of another start time must not apply", got["/a"], got["/b"])
		}
	})
}

// TestMovedTasksBounded: moves of tasks no pass ever sees are forgotten
// after a while, and too many at once are not kept.
func TestMovedTasksBounded(t *testing.T) {
	r := newRig(t, "/", "/a")
	clk := &clock{ns: 1e9}
	container.SetClock(r.table, clk.now)
	r.pass()
	for i := range int32(20000) {
		r.table.Migrate(container.Migration{TID: 100000 + i, StartTime: 1, To: r.tree.ID("/a")})
	}
	c := r.table.Counters()
	if c.MovedTasks != 16384 || c.MigrationOverflows != 20000-16384 {
		t.Errorf("moved %d, overflows %d: want the bound 16384 kept", c.MovedTasks, c.MigrationOverflows)
	}
	for range 3 {
		clk.ns += 31e9
		r.pass()
	}
	if c := r.table.Counters(); c.MovedTasks != 0 {
		t.Errorf("moved %d after 93 s, want 0", c.MovedTasks)
	}
	if got := totalsOf(r.pass())["/"]; got != (schedstat.Stat{}) {
		t.Errorf("/ = %+v: forgotten moves credit nothing", got)
	}
}
