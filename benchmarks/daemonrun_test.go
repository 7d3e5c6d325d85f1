package benchmarks_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

// userHZ is the unit of utime and stime in /proc/<pid>/stat.
const userHZ = 100

// process is a daemon (or a baseline reader) started for BenchmarkDaemon,
// serving /metrics at url.
type process struct {
	cmd *exec.Cmd
	url string
}

// freeAddress returns a loopback address with a port nothing listens on.
func freeAddress(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startProcess starts cmd, which serves /metrics at addr, stops it when
// tb ends, and waits until a scrape answers.
func startProcess(tb testing.TB, cmd *exec.Cmd, addr string) *process {
	tb.Helper()
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &process{cmd: cmd, url: "http://" + addr + "/metrics"}
	tb.Cleanup(p.stop)
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if _, _, err := p.scrape(); err == nil {
			return p
		} else if time.Now().After(deadline) {
			tb.Fatalf("%s: no answer at %s: %v", cmd.Path, p.url, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stop ends the process with SIGTERM, then SIGKILL, and reaps it.
func (p *process) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// scrape gets /metrics as Prometheus does (OpenMetrics first, gzip) and
// returns how long it took, to the last byte, and the body's size.
func (p *process) scrape() (time.Duration, int, error) {
	req, err := http.NewRequest(http.MethodGet, p.url, nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %s", resp.Status)
	}
	return time.Since(start), int(n), err
}

// sample is what BenchmarkDaemon reads of a process at one moment.
type sample struct {
	when time.Time
	// cpuTicks is utime + stime, in USER_HZ ticks.
	cpuTicks uint64
	// bpf is the run time of the process's BPF programs by name.
	bpf map[string]time.Duration
}

// sampleOf reads the process's CPU time and its BPF programs' run time.
func sampleOf(tb testing.TB, pid int) sample {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// Fields after the command, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	return sample{when: time.Now(), cpuTicks: ut + st, bpf: bpfRunTimes(tb, pid)}
}

// bpfRunTimes returns the run time (kernel BPF stats, run_time_ns) of
// every BPF program the process holds an fd of, summed by program name;
// an iterator's name (a program of one of the process's iter links, which
// runs in the process's own reads) ends in "/iter".
func bpfRunTimes(tb testing.TB, pid int) map[string]time.Duration {
	tb.Helper()
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	// Every prog_id of the fds (programs and links), and which are the
	// programs of iter links.
	ids, iters := map[uint64]bool{}, map[uint64]bool{}
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var iter bool
		var id uint64
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ":")
			switch v = strings.TrimSpace(v); k {
			case "link_type":
				iter = v == "iter"
			case "prog_id":
				if id, err = strconv.ParseUint(v, 10, 32); err == nil {
					ids[id] = true
				}
			}
		}
		f.Close()
		if iter && id != 0 {
			iters[id] = true
		}
	}
	out := map[string]time.Duration{}
	for id := range ids {
		prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
		if err != nil {
			tb.Fatalf("BPF program %d of process %d: %v", id, pid, err)
		}
		info, ierr := prog.Info()
		stats, serr := prog.Stats()
		prog.Close()
		if ierr != nil || serr != nil {
			tb.Fatalf("BPF program %d: info %v, stats %v", id, ierr, serr)
		}
		name := info.Name
		if iters[id] {
			name += "/iter"
		}
		out[name] += stats.Runtime
	}
	return out
}

// memory returns the process's resident set now and at its peak, and of
// it now the pages mapped from files (VmRSS, VmHWM and RssFile), in bytes.
// The file pages are mostly the binary's, clean and shared with the page
// cache; the rest is the process's own memory.
func memory(tb testing.TB, pid int) (rss, peak, file uint64) {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	fields := map[string]*uint64{"VmRSS:": &rss, "VmHWM:": &peak, "RssFile:": &file}
	for _, line := range strings.Split(string(b), "\n") {
		for key, dst := range fields {
			if v, ok := strings.CutPrefix(line, key); ok {
				kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				*dst = kb << 10
			}
		}
	}
	return rss, peak, file
}

// metricValue returns the value of the first sample of the metric name in
// the process's /metrics, or -1.
func (p *process) metricValue(name string) float64 {
	resp, err := http.Get(p.url)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}
