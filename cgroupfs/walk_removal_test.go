package cgroupfs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
)

func TestListRealRemovedWhileWalking(t *testing.T) {
	for _, name := range []string{"cpuacct", Unified} {
		t.Run(name, func(t *testing.T) {
			hdir := realHierarchy(t, name)
			// Each "gone" cgroup is removed at a different moment of the
			// walk.
			top := makeCgroups(t, hdir, "gone-listed", "gone-unread", "gone-reading", "stay", "stay/kid")
			base := "/" + top
			rm := func(rel string) {
				if err := os.Remove(filepath.Join(hdir, top, rel)); err != nil {
					t.Errorf("removing %s while walking: %v", rel, err)
				}
			}
			h, err := Open(sysCgroup, name)
			if err != nil {
				t.Fatal(err)
			}
			var fired []string
			h.w.testHook = func(at hookPoint, rel string) {
				switch {
				case at == hookKidsListed && rel == base:
					rm("gone-listed") // listed by getdents, not yet opened
				case at == hookBeforeRead && rel == base+"/gone-unread":
					rm("gone-unread") // about to be read
				case at == hookFileOpened && rel == base+"/gone-reading":
					rm("gone-reading") // threads file open, not read
				default:
					return
				}
				fired = append(fired, rel)
			}
			var l Listing
			if err := h.List(&l); err != nil {
				t.Fatalf("List: %v", err)
			}
			if len(fired) != 3 {
				t.Fatalf("hooks fired at %v, want 3 moments", fired)
			}
			var gotPaths []string
			for rel, c := range subtree(&l, top) {
				gotPaths = append(gotPaths, rel)
				if c.Err != nil {
					t.Errorf("%s: %v", c.Path, c.Err)
				}
			}
			slices.Sort(gotPaths)
			if diff := cmp.Diff([]string{"", "/stay", "/stay/kid"}, gotPaths); diff != "" {
				t.Errorf("test cgroups listed (-want +got):\n%s", diff)
			}
			h.w.testHook = nil
			if err := h.List(&l); err != nil {
				t.Fatalf("List after removal: %v", err)
			}
			if got := len(subtree(&l, top)); got != 3 {
				t.Errorf("next pass lists %d test cgroups, want 3", got)
			}
		})
	}
}

func TestListRealConcurrentChurn(t *testing.T) {
	hdir := realHierarchy(t, testcg.Default())
	top := makeCgroups(t, hdir)
	h, err := Open(sysCgroup, testcg.Default())
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(stop)
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			dir := filepath.Join(hdir, top, fmt.Sprintf("c%d", i%8))
			if err := os.Mkdir(dir, 0o755); err == nil {
				_ = os.Mkdir(filepath.Join(dir, "x"), 0o755)
			}
			_ = os.Remove(filepath.Join(dir, "x"))
			_ = os.Remove(dir)
		}
	}()
	var l Listing
	passes := 0
	for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline); passes++ {
		if err := h.List(&l); err != nil {
			t.Fatalf("pass %d: %v", passes, err)
		}
		for _, c := range subtree(&l, top) {
			if c.Err != nil {
				t.Fatalf("pass %d: %s: %v", passes, c.Path, c.Err)
			}
		}
	}
	t.Logf("%d passes while cgroups came and went", passes)
}
