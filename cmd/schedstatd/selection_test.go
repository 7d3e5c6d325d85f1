package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// TestSelectionExcludesSubtree runs the daemon with a real subtree
// excluded and the depth bounded: the excluded cgroups' series are not
// served, nor those too deep, while the spinner running in the excluded
// subtree still counts in its served ancestor, at least as much as the
// kernel showed for it just before the scrape.
func TestSelectionExcludesSubtree(t *testing.T) {
	hier := testcg.Default()
	top := testcg.Make(t, hier)
	for _, rel := range []string{"keep", "keep/deep", "keep/deep/deeper", "drop", "drop/sub"} {
		if err := os.Mkdir(filepath.Join(top, rel), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spin := testproc.Spin(t)
	testcg.Move(t, filepath.Join(top, "drop/sub"), spin.Process.Pid)
	id := "/" + filepath.Base(top)
	d := startDaemon(t, "--collect.cgroups.exclude="+strings.ReplaceAll(id, ".", `\.`)+"/drop(/.*)?", "--collect.cgroups.max-depth=3")
	time.Sleep(300 * time.Millisecond) // the spinner runs
	b, err := os.ReadFile("/proc/" + strconv.Itoa(spin.Process.Pid) + "/schedstat")
	if err != nil {
		t.Fatal(err)
	}
	ran, _ := strconv.ParseUint(strings.Fields(string(b))[0], 10, 64)
	mfs := scrape(t, http.DefaultClient, "http://"+d.addr+"/metrics")
	const run = "container_cpu_schedstat_run_seconds_total"
	for rel, want := range map[string]bool{"": true, "/keep": true, "/keep/deep": true, "/keep/deep/deeper": false, "/drop": false, "/drop/sub": false} {
		if _, got := value(mfs, run, id+rel); got != want {
			t.Errorf("%s%s served %v, want %v", id, rel, got, want)
		}
	}
	got, _ := value(mfs, run, id)
	if got == 0 || got < float64(ran)/1e9 {
		t.Errorf("%s: run %v s, the excluded spinner below it had run %v s before the scrape", id, got, float64(ran)/1e9)
	}
	if sel, all := gauge(mfs, "schedstatd_cgroups_selected"), gauge(mfs, "schedstatd_cgroups"); sel <= 0 || sel > all-3 {
		t.Errorf("schedstatd_cgroups_selected %v of schedstatd_cgroups %v: want at least the 3 left out fewer", sel, all)
	}
}
