package benchmarks_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"golang.org/x/sys/unix"
)

// Environment of BenchmarkDaemon (make bench-daemon sets the first two).
const (
	// envDaemonRun is how long each design runs, such as 60s; unset, the
	// benchmark runs its small workload for a few seconds, as bench-smoke
	// does with -short.
	envDaemonRun = "SCHEDSTATD_BENCH_DAEMON"
	// envBinary is the daemon binary to run; unset, it is built.
	envBinary = "SCHEDSTATD_BIN"
	// envScrape is the time between scrapes (default 10s).
	envScrape = "SCHEDSTATD_BENCH_SCRAPE"
	// envWorkloads and envDesigns pick workloads and designs by name,
	// comma separated (see picked).
	envWorkloads = "SCHEDSTATD_BENCH_WORKLOADS"
	envDesigns   = "SCHEDSTATD_BENCH_DESIGNS"
	// envPerf, set to a directory, records a perf profile (call graphs,
	// kernel and user) of each design for 20 s after its measured run,
	// into <dir>/<workload>-<design>.perf.data; read it with perf report.
	envPerf = "SCHEDSTATD_BENCH_PERF"
)

// daemonWorkload is a node for BenchmarkDaemon: sleeping threads dealt
// over the containers of pods, each pod a cgroup with perPod container
// cgroups.
type daemonWorkload struct {
	name                  string
	threads, pods, perPod int
}

// daemonDesign is what runs over a workload: the daemon with some flags,
// or the cAdvisor-style reader.
type daemonDesign struct {
	name     string
	args     []string
	cadvisor bool
}

// daemonRow is one line of BenchmarkDaemon's table.
type daemonRow struct {
	workload, design            string
	cpuPct, bpfInPct, bpfOutPct float64
	passes                      float64
	cpuMsPerPass, nsPerThread   float64
	rssMiB, peakMiB             float64
	// fileMiB is the part of rssMiB mapped from files (RssFile): the
	// binary's pages, shared with the page cache.
	fileMiB float64
	// heapMiB is the Go heap in use (go_memstats_heap_inuse_bytes), for
	// the daemon.
	heapMiB                          float64
	scrapeMs, scrapeMaxMs, scrapeKiB float64
	scrapes                          int
	// load is the machine's 1-minute load average at the start and the
	// end of the run: other work on a shared machine slows a pass down
	// and leaves a CPU-bound design less than the CPU it would take.
	load [2]float64
}

// BenchmarkDaemon runs the real daemon binary over real sleeping threads
// in real cgroups, each design for SCHEDSTATD_BENCH_DAEMON (make
// bench-daemon: 60s), one after another in the same run: the daemon as it
// starts by default (auto: the kernel totals where a bpf filesystem is
// mounted at its pin path, else the task iterator; exit capture), the
// daemon over the procfs source (--collect.source=procfs), the daemon over
// the totals kept in the kernel (--collect.source=aggregate), and the
// cAdvisor-style reader (internal/testkit/baseline: a handler per cgroup
// reading its subtree's tasks with os.ReadFile, served through
// client_golang).
// Each is scraped every SCHEDSTATD_BENCH_SCRAPE (10s) as Prometheus
// scrapes (OpenMetrics, gzip). It reports the process's CPU (utime +
// stime from /proc/<pid>/stat) as a share of one core, the run time of its
// BPF programs (run_time_ns, with the kernel's BPF statistics on for the
// run: iterator programs run in the daemon's reads and are inside its CPU
// time, the others on every CPU outside it), CPU per pass and per thread
// per pass, RSS now and at its peak, and the scrape time (with its fresh
// pass) and size; then prints a table of all. Workloads: 10,000 threads
// in 100 cgroups; 20,000 threads in 5,000 cgroups (1,000 pods of 4
// containers; on a hybrid node with twins in the cpu and v2 hierarchies,
// so every cgroup has its bandwidth and pressure files). Unset, or with
// -short, it runs 1,000 threads in 50 cgroups for 3 s per design. It
// needs root.
func BenchmarkDaemon(b *testing.B) {
	e2e.RequireRoot(b)
	run, scrapeEvery := 3*time.Second, time.Second
	workloads := []daemonWorkload{{"threads=1000/cgroups=50", 1000, 10, 4}}
	if s := os.Getenv(envDaemonRun); s != "" && !testing.Short() {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("%s=%q: %v", envDaemonRun, s, err)
		}
		run, scrapeEvery = d, 10*time.Second
		workloads = []daemonWorkload{
			{"threads=10000/cgroups=100", 10000, 25, 3},
			{"threads=20000/cgroups=5000", 20000, 1000, 4},
		}
	}
	if s := os.Getenv(envScrape); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("%s=%q: %v", envScrape, s, err)
		}
		scrapeEvery = d
	}
	designs := []daemonDesign{
		{name: "schedstatd", args: []string{"--collect.source=auto"}},
		// The kernel's totals, unpinned: pinning is for restarts, and
		// costs nothing a pass.
		{name: "schedstatd-aggregate", args: []string{"--collect.source=aggregate", "--bpf.pin-path="}},
		{name: "schedstatd-procfs", args: []string{"--collect.source=procfs"}},
		{name: "cadvisor-style", cadvisor: true},
	}
	bin := daemonBinary(b)
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Fatalf("enable the kernel's BPF statistics: %v", err)
	}
	// Closing the fd turns the statistics off again, as they were.
	b.Cleanup(func() { stats.Close() })
	var rows []daemonRow
	for _, w := range workloads {
		if !picked(envWorkloads, w.name) {
			continue
		}
		b.Run(w.name, func(b *testing.B) {
			threads := fitThreads(b, w.threads)
			makeNode(b, w, threads)
			for _, d := range designs {
				if !picked(envDesigns, d.name) {
					continue
				}
				b.Run(d.name, func(b *testing.B) {
					row := runDesign(b, bin, w, threads, d, run, scrapeEvery)
					rows = append(rows, row)
					b.ReportMetric(row.cpuPct, "cpu-%")
					b.ReportMetric(row.bpfInPct+row.bpfOutPct, "bpf-%")
					b.ReportMetric(row.cpuMsPerPass, "cpu-ms/pass")
					b.ReportMetric(row.nsPerThread, "cpu-ns/thread/pass")
					b.ReportMetric(row.rssMiB, "rss-MiB")
					b.ReportMetric(row.fileMiB, "rss-file-MiB")
					b.ReportMetric(row.scrapeMs, "scrape-ms")
				})
			}
		})
	}
	printDaemonTable(os.Stdout, rows, run, scrapeEvery)
}

// picked reports whether name is picked by the comma-separated names in
// the environment variable env, each the whole name or the part before a
// slash ("threads=20000" picks "threads=20000/cgroups=5000"); all are
// when it is unset.
func picked(env, name string) bool {
	s := os.Getenv(env)
	if s == "" {
		return true
	}
	for _, p := range strings.Split(s, ",") {
		if name == p || strings.HasPrefix(name, p+"/") {
			return true
		}
	}
	return false
}

// daemonBinary returns SCHEDSTATD_BIN, or the daemon built into a
// temporary directory.
func daemonBinary(b *testing.B) string {
	if bin := os.Getenv(envBinary); bin != "" {
		return bin
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = "/usr/local/go/bin/go"
	}
	bin := filepath.Join(b.TempDir(), "schedstatd")
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/schedstatd/schedstatd/cmd/schedstatd")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("build the daemon: %v", err)
	}
	return bin
}

// makeNode makes the workload's cgroups in the hierarchy the daemon walks
// (and twins at the same paths in the v1 cpu and the v2 hierarchies on a
// hybrid node), starts its sleeping threads and deals them over the
// container cgroups, each a block of consecutive thread ids. Everything
// goes when b ends.
func makeNode(b *testing.B, w daemonWorkload, threads int) {
	b.Helper()
	hier := testcg.Default()
	v2 := hier == testcg.Unified
	top := testcg.Make(b, hier)
	var rels, leaves []string
	for i := range w.pods {
		pod := fmt.Sprintf("pod%04d", i)
		rels = append(rels, pod)
		for j := range w.perPod {
			rels = append(rels, fmt.Sprintf("%s/ctr%d", pod, j))
			leaves = append(leaves, filepath.Join(top, rels[len(rels)-1]))
		}
	}
	mkdirAll(b, top, rels, v2)
	if !v2 {
		for _, twin := range []string{"cpu", testcg.Unified} {
			root := testcg.Dir(twin)
			dir := filepath.Join(root, filepath.Base(top))
			if err := os.Mkdir(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { testcg.Remove(b, root, dir) })
			mkdirAll(b, dir, rels, false)
		}
	}
	p := testproc.StartSleepers(b, threads)
	testcg.Move(b, top, p.PID)
	threadsFile := "tasks"
	if v2 {
		threadsFile = "cgroup.threads"
	}
	var buf []byte
	// In blocks of consecutive threads, as a process's threads are made
	// together and share a cgroup: the kernel hands out their ids in
	// order, which the task iterator visits them in.
	for i, tid := range p.Workers {
		buf = strconv.AppendInt(buf[:0], int64(tid), 10)
		if err := os.WriteFile(filepath.Join(leaves[i*len(leaves)/len(p.Workers)], threadsFile), buf, 0); err != nil {
			b.Fatalf("move thread %d: %v", tid, err)
		}
	}
}

// mkdirAll makes the cgroups rels below dir, parents first; on v2 as
// threaded cgroups, so that one process's threads can be dealt over them.
func mkdirAll(b *testing.B, dir string, rels []string, threaded bool) {
	b.Helper()
	for _, rel := range rels {
		p := filepath.Join(dir, rel)
		if err := os.Mkdir(p, 0o755); err != nil {
			b.Fatal(err)
		}
		if threaded {
			if err := os.WriteFile(filepath.Join(p, "cgroup.type"), []byte("threaded"), 0); err != nil {
				b.Fatalf("%s: make it threaded: %v", p, err)
			}
		}
	}
}

// runDesign runs one design over the node for run and measures it.
func runDesign(b *testing.B, bin string, w daemonWorkload, threads int, d daemonDesign, run, scrapeEvery time.Duration) daemonRow {
	addr := freeAddress(b)
	var cmd *exec.Cmd
	if d.cadvisor {
		cmd = exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
		cmd.Env = append(os.Environ(), envCadvisor+"="+addr, "SCHEDSTATD_BENCH_CGROUPFS="+testcg.Root)
	} else {
		args := append([]string{"--web.listen-address=" + addr, "--collect.interval=1s", "--state.path=",
			"--container-runtime-endpoint=none", "--log.level=warn"}, d.args...)
		cmd = exec.Command(bin, args...)
	}
	p := startProcess(b, cmd, addr)
	defer p.stop()
	// Warm: every task and cgroup seen, fds opened, caches built.
	for range 2 {
		if _, _, err := p.scrape(); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second)
	pid := cmd.Process.Pid
	passes0 := p.metricValue("schedstatd_collections_total")
	load0 := loadAverage(b)
	s0 := sampleOf(b, pid)
	var times []time.Duration
	var maxTime time.Duration
	var size int
	for end := s0.when.Add(run); time.Now().Before(end); {
		time.Sleep(min(scrapeEvery, time.Until(end)))
		t, n, err := p.scrape()
		if err != nil {
			b.Fatalf("scrape: %v", err)
		}
		times, size, maxTime = append(times, t), n, max(maxTime, t)
	}
	s1 := sampleOf(b, pid)
	passes1 := p.metricValue("schedstatd_collections_total")
	rss, peak, file := memory(b, pid)
	heap := p.metricValue("go_memstats_heap_inuse_bytes")
	if dir := os.Getenv(envPerf); dir != "" {
		profile(b, dir, w.name+"-"+d.name, pid, p, scrapeEvery)
	}
	wall := s1.when.Sub(s0.when).Seconds()
	cpu := float64(s1.cpuTicks-s0.cpuTicks) / userHZ
	row := daemonRow{workload: w.name, design: d.name, cpuPct: 100 * cpu / wall,
		rssMiB: float64(rss) / (1 << 20), peakMiB: float64(peak) / (1 << 20), fileMiB: float64(file) / (1 << 20),
		scrapeMs: ms(medianOf(times)), scrapeMaxMs: ms(maxTime), scrapeKiB: float64(size) / 1024, scrapes: len(times),
		load: [2]float64{load0, loadAverage(b)}, heapMiB: max(heap, 0) / (1 << 20)}
	for name, t1 := range s1.bpf {
		dt := (t1 - s0.bpf[name]).Seconds()
		// An iterator's program runs in the read that drives it, in the
		// daemon's own CPU time; the others run outside it.
		if strings.HasSuffix(name, "/iter") {
			row.bpfInPct += 100 * dt / wall
		} else {
			row.bpfOutPct += 100 * dt / wall
		}
	}
	row.passes = max(passes1-passes0, 1)
	row.cpuMsPerPass = 1000 * cpu / row.passes
	row.nsPerThread = 1e9 * cpu / row.passes / float64(threads)
	b.Logf("%s over %s: %+v", d.name, w.name, row)
	return row
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// printDaemonTable prints the rows as a Markdown table.
func printDaemonTable(w io.Writer, rows []daemonRow, run, scrapeEvery time.Duration) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\nBenchmarkDaemon: each design %v, scraped every %v (OpenMetrics, gzip), --collect.interval=1s\n\n", run, scrapeEvery)
	fmt.Fprintln(w, "| workload | design | CPU % of a core | BPF % in its CPU | BPF % outside it | passes | CPU ms/pass | CPU ns/thread/pass | RSS MiB (peak) | of it file-backed MiB | Go heap MiB | scrape ms median (max) | scrape KiB | load avg |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %.3f | %.3f | %.3f | %.0f | %.2f | %.0f | %.1f (%.1f) | %.1f | %.1f | %.1f (%.1f) | %.0f | %.1f-%.1f |\n",
			r.workload, r.design, r.cpuPct, r.bpfInPct, r.bpfOutPct, r.passes, r.cpuMsPerPass, r.nsPerThread, r.rssMiB, r.peakMiB, r.fileMiB, r.heapMiB, r.scrapeMs, r.scrapeMaxMs, r.scrapeKiB, r.load[0], r.load[1])
	}
	fmt.Fprintln(w)
}

// medianOf returns the median of ds, 0 for none, leaving ds as it was.
func medianOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return median(slices.Clone(ds))
}

// profile records perf call graphs of the process pid for 20 s, scraping
// it as the measured run did, into dir.
func profile(b *testing.B, dir, name string, pid int, p *process, scrapeEvery time.Duration) {
	out := filepath.Join(dir, strings.ReplaceAll(name, "/", "-")+".perf.data")
	cmd := exec.Command("perf", "record", "-g", "-F", "999", "-p", strconv.Itoa(pid), "-o", out, "--", "sleep", "20")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatalf("perf: %v", err)
	}
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
		time.Sleep(min(scrapeEvery, time.Until(end)))
		p.scrape()
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("perf record: %v", err)
	}
	b.Logf("perf profile of %s: %s", name, out)
}

// loadAverage returns the machine's 1-minute load average.
func loadAverage(tb testing.TB) float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		tb.Fatal(err)
	}
	v, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return v
}
