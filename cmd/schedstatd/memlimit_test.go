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

// TestMemoryLimitBoundsKeptFDs runs the daemon, procfs source, in a memory
// cgroup of 64 MiB while 10,000 more threads sleep on the node. The kernel
// charges each kept schedstat fd (about 4.5 KiB) to the daemon's memory
// cgroup, so one fd per thread would take 45 MiB beside the daemon's heap
// and its binary's pages: the fd budget is bounded by the memory headroom,
// the threads beyond are read unkept, and the daemon lives, counting every
// thread.
func TestMemoryLimitBoundsKeptFDs(t *testing.T) {
	mem := testcg.Make(t, "memory")
	const limit = 64 << 20
	if err := os.WriteFile(filepath.Join(mem, "memory.limit_in_bytes"), []byte(strconv.Itoa(limit)), 0); err != nil {
		t.Fatal(err)
	}
	sleepers := testproc.StartSleepers(t, 10000)
	into := []string{"/bin/sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, mem}
	// Not the race-enabled build: its shadow memory alone would not fit.
	d := startBinary(t, plainBinary(t), into, "--collect.interval=200ms", "--collect.source=procfs", "--exit-capture=off", "--container-runtime-endpoint=none")
	url := "http://" + d.addr + "/metrics"
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(mem, "memory.stat"))
			t.Logf("memory.stat:\n%s", b)
		}
	})
	var tracked, unkept float64
	for range 10 {
		time.Sleep(300 * time.Millisecond)
		mfs := scrape(t, http.DefaultClient, url)
		tracked = mfs["schedstatd_tasks_tracked"].GetMetric()[0].GetGauge().GetValue()
		unkept = mfs["schedstatd_tasks_unkept"].GetMetric()[0].GetGauge().GetValue()
	}
	peak := readUint(t, filepath.Join(mem, "memory.max_usage_in_bytes"))
	failcnt := readUint(t, filepath.Join(mem, "memory.failcnt"))
	t.Logf("tracked %v threads, %v unkept; memory peak %.1f MiB of %d MiB, failcnt %d", tracked, unkept, float64(peak)/(1<<20), limit>>20, failcnt)
	if tracked < float64(len(sleepers.Workers)) || unkept == 0 {
		t.Errorf("tracked %v, unkept %v: want every one of the %d sleepers tracked and some unkept", tracked, unkept, len(sleepers.Workers))
	}
	if !strings.Contains(d.log(), "bounded by the memory limit") {
		t.Errorf("no word of the memory bound in the log:\n%s", d.log())
	}
	if d.cmd.ProcessState != nil {
		t.Fatalf("the daemon exited: %v", d.cmd.ProcessState)
	}
}

func readUint(t *testing.T, path string) uint64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
