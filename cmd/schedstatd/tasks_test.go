package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/aggregate"
	"github.com/schedstatd/schedstatd/collector"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/crypto/bcrypt"
)

// drillWorkload is one test cgroup with three processes: spin, whose 4
// threads (spin0 to spin3) spin; victim, whose 2 busy threads (victim0,
// victim1) wait behind them; and idle, which only sleeps. Six spinning
// threads share this machine's 2 cores, so each waits about as long as
// the others: spin waits about twice what victim does, idle nothing.
type drillWorkload struct {
	dir                string
	id                 string // the id label
	inode              uint64
	spin, victim, idle *testproc.Proc
}

func startDrillWorkload(t *testing.T) *drillWorkload {
	t.Helper()
	e2e.RequireRoot(t)
	dir := testcg.Make(t, testcg.Default())
	// With GOMAXPROCS at the core count, the Go runtime would park
	// locked threads outside the kernel's runqueue; the helpers inherit it.
	t.Setenv("GOMAXPROCS", "16")
	w := &drillWorkload{dir: dir, id: "/" + filepath.Base(dir)}
	w.spin = testproc.StartNamedIn(t, 4, dir, "spin")
	w.victim = testproc.StartNamedIn(t, 2, dir, "victim")
	w.idle = testproc.StartNamedIn(t, 0, dir, "")
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	w.inode = st.Ino
	return w
}

func (w *drillWorkload) procs() []*testproc.Proc { return []*testproc.Proc{w.spin, w.victim, w.idle} }

// stop stops every process of the workload, so its counters hold still.
func (w *drillWorkload) stop(t *testing.T) {
	t.Helper()
	for _, p := range w.procs() {
		p.Stop(t)
	}
}

func (w *drillWorkload) cont(t *testing.T) {
	t.Helper()
	for _, p := range w.procs() {
		p.Cont(t)
	}
}

// kernelStats reads /proc/<pid>/task/<tid>/schedstat of every thread of p.
func kernelStats(t *testing.T, p *testproc.Proc) map[int32]schedstat.Stat {
	t.Helper()
	out := map[int32]schedstat.Stat{}
	for _, tid := range p.Threads(t) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", p.PID, tid))
		if err != nil {
			continue // exited since listed
		}
		st, err := schedstat.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		out[tid] = st
	}
	return out
}

// getTasks asks the daemon for the tasks of the cgroup query names.
func getTasks(t *testing.T, addr string, query url.Values) collector.CgroupTasks {
	t.Helper()
	resp, err := http.Get("http://" + addr + collector.TasksPath + "?" + query.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s: %s", query.Encode(), resp.Status, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var out collector.CgroupTasks
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func process(ct collector.CgroupTasks, pid int) (collector.Process, bool) {
	for _, p := range ct.Processes {
		if int(p.PID) == pid {
			return p, true
		}
	}
	return collector.Process{}, false
}

// within reports whether got is within 2 % of want.
func within(got, want float64) bool {
	return want > 0 && got/want >= 0.98 && got/want <= 1.02
}

// TestTasksAPIMatchesProcfs asks the daemon for the test cgroup's tasks
// twice, around a window fenced with SIGSTOP so the counters hold still
// while both the daemon and the test read them: each process's increase
// (and each busy thread's) must match the kernel's
// /proc/<pid>/task/<tid>/schedstat deltas over the same window, the
// processes order by wait as the kernel's counters do, and the threads
// carry their names. With the task iterator, the daemon's default here,
// the answer is the pass's tasks; with the kernel totals, which keep no
// task, the threads the cgroups list are read at the request.
func TestTasksAPIMatchesProcfs(t *testing.T) {
	for _, source := range []string{"auto", "aggregate"} {
		t.Run(source, func(t *testing.T) {
			if err := aggregate.KernelSupports(); source == "aggregate" && err != nil {
				t.Skipf("--collect.source=aggregate: %v (aggregate TestSelect)", err)
			}
			tasksAPIMatchesProcfs(t, source)
		})
	}
}

func tasksAPIMatchesProcfs(t *testing.T, source string) {
	w := startDrillWorkload(t)
	d := startDaemon(t, "--collect.interval=200ms", "--collect.source="+source)
	byID := url.Values{"id": {strconv.FormatUint(w.inode, 10)}}

	w.stop(t)
	a1 := getTasks(t, d.addr, byID)
	k1 := map[int]map[int32]schedstat.Stat{}
	for _, p := range w.procs() {
		k1[p.PID] = kernelStats(t, p)
	}
	w.cont(t)
	time.Sleep(3 * time.Second)
	w.stop(t)
	a2 := getTasks(t, d.addr, byID)
	k2 := map[int]map[int32]schedstat.Stat{}
	for _, p := range w.procs() {
		k2[p.PID] = kernelStats(t, p)
	}
	w.cont(t)

	if a2.ID != w.inode || a2.Path != w.id {
		t.Errorf("answer for id %d: id %d path %q, want path %q", w.inode, a2.ID, a2.Path, w.id)
	}
	if byPath := getTasks(t, d.addr, url.Values{"path": {w.id}}); byPath.ID != w.inode || byPath.Path != w.id {
		t.Errorf("answer for path %s: id %d path %q, want id %d", w.id, byPath.ID, byPath.Path, w.inode)
	}
	if !a2.Time.After(a1.Time) {
		t.Errorf("times %s then %s", a1.Time, a2.Time)
	}
	if len(a2.Processes) != 3 {
		t.Errorf("%d processes, want the 3 of the workload: %+v", len(a2.Processes), a2.Processes)
	}

	// Deltas per process over the threads both sides saw at both ends.
	type sums struct{ api, kernel [2]float64 } // run, wait
	var order []int
	deltas := map[int]*sums{}
	for _, p := range w.procs() {
		p1, ok1 := process(a1, p.PID)
		p2, ok2 := process(a2, p.PID)
		if !ok1 || !ok2 {
			t.Fatalf("process %d missing from an answer", p.PID)
		}
		before := map[int32]collector.Thread{}
		for _, th := range p1.Threads {
			before[th.TID] = th
		}
		s := &sums{}
		for _, th := range p2.Threads {
			b, ok := before[th.TID]
			kb, okb := k1[p.PID][th.TID]
			ka, oka := k2[p.PID][th.TID]
			if !ok || !okb || !oka {
				continue
			}
			s.api[0] += float64(th.RunNanoseconds - b.RunNanoseconds)
			s.api[1] += float64(th.RunqueueNanoseconds - b.RunqueueNanoseconds)
			s.kernel[0] += float64(ka.RunNanoseconds - kb.RunNanoseconds)
			s.kernel[1] += float64(ka.WaitNanoseconds - kb.WaitNanoseconds)
		}
		deltas[p.PID] = s
		order = append(order, p.PID)
		t.Logf("process %d: run %.3f s (kernel %.3f), wait %.3f s (kernel %.3f)", p.PID, s.api[0]/1e9, s.kernel[0]/1e9, s.api[1]/1e9, s.kernel[1]/1e9)
	}
	for _, pid := range order[:2] {
		s := deltas[pid]
		if !within(s.api[0], s.kernel[0]) || !within(s.api[1], s.kernel[1]) {
			t.Errorf("process %d: run %v wait %v ns from the API, %v %v from procfs: more than 2 %% apart", pid, s.api[0], s.api[1], s.kernel[0], s.kernel[1])
		}
	}
	spin, victim, idle := deltas[w.spin.PID], deltas[w.victim.PID], deltas[w.idle.PID]
	if !(spin.kernel[1] > victim.kernel[1] && victim.kernel[1] > idle.kernel[1]) {
		t.Errorf("the kernel's waits are not in the workload's order: spin %v victim %v idle %v", spin.kernel[1], victim.kernel[1], idle.kernel[1])
	}
	if !(spin.api[1] > victim.api[1] && victim.api[1] > idle.api[1]) {
		t.Errorf("the API's waits are not in the workload's order: spin %v victim %v idle %v", spin.api[1], victim.api[1], idle.api[1])
	}

	// Names, and the busy threads' own increases.
	v, _ := process(a2, w.victim.PID)
	vb, _ := process(a1, w.victim.PID)
	if v.Comm == "" || !strings.Contains(v.Cmdline, "-test.run=^$") {
		t.Errorf("victim's comm %q, cmdline %q", v.Comm, v.Cmdline)
	}
	names := map[int32]string{}
	for _, th := range v.Threads {
		names[th.TID] = th.Comm
		if th.Cgroup != w.id {
			t.Errorf("thread %d in cgroup %q, want %q", th.TID, th.Cgroup, w.id)
		}
	}
	for i, tid := range w.victim.Workers {
		if want := "victim" + strconv.Itoa(i); names[tid] != want {
			t.Errorf("thread %d is named %q, want %q", tid, names[tid], want)
		}
		var before, after collector.Thread
		for _, th := range vb.Threads {
			if th.TID == tid {
				before = th
			}
		}
		for _, th := range v.Threads {
			if th.TID == tid {
				after = th
			}
		}
		kb, ka := k1[w.victim.PID][tid], k2[w.victim.PID][tid]
		if !within(float64(after.RunqueueNanoseconds-before.RunqueueNanoseconds), float64(ka.WaitNanoseconds-kb.WaitNanoseconds)) {
			t.Errorf("thread %d waited %d ns by the API, %d by procfs", tid, after.RunqueueNanoseconds-before.RunqueueNanoseconds, ka.WaitNanoseconds-kb.WaitNanoseconds)
		}
	}
	if got := len(v.Threads); got < 3 {
		t.Errorf("victim has %d threads listed, want its 2 workers and its runtime's", got)
	}
}

// TestTasksAPIRefuses checks the answers to what the API cannot serve: 4xx
// and one line saying why.
func TestTasksAPIRefuses(t *testing.T) {
	e2e.RequireRoot(t)
	d := startDaemon(t, "--collect.interval=200ms")
	base := "http://" + d.addr + collector.TasksPath
	for _, tc := range []struct {
		name, method, query string
		code                int
		says                string
	}{
		{"unknown id", "GET", "?id=18446744073709551615", 404, "no cgroup with id 18446744073709551615"},
		{"unknown path", "GET", "?path=/schedstatd-no-such-cgroup", 404, `no cgroup with path "/schedstatd-no-such-cgroup"`},
		{"no cgroup", "GET", "", 400, "no cgroup given"},
		{"id not a number", "GET", "?id=abc", 400, `id "abc" is not a cgroup inode number`},
		{"id zero", "GET", "?id=0", 400, "not a cgroup inode number"},
		{"both", "GET", "?id=5&path=/", 400, "either id or path, not both"},
		{"twice", "GET", "?id=5&id=6", 400, "id is given 2 times"},
		{"unknown parameter", "GET", "?cgroup=/", 400, `unknown query parameter "cgroup"`},
		{"malformed escape", "GET", "?id=%zz", 400, "malformed query"},
		{"relative path", "GET", "?path=kubepods", 400, "does not start with /"},
		{"lone backslash", "GET", "?path=/a%5Cb", 400, "lone backslash"},
		{"POST", "POST", "?id=1", 405, "POST is not allowed"},
		{"DELETE", "DELETE", "?id=1", 405, "DELETE is not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, base+tc.query, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body := string(b)
			if resp.StatusCode != tc.code || !strings.Contains(body, tc.says) {
				t.Errorf("%s %s: %s %q, want %d and %q", tc.method, tc.query, resp.Status, body, tc.code, tc.says)
			}
			if strings.Count(strings.TrimSuffix(body, "\n"), "\n") != 0 {
				t.Errorf("the reason is not one line: %q", body)
			}
		})
	}
	// The root is always there: the happy path of the same daemon.
	if root := getTasks(t, d.addr, url.Values{"path": {"/"}}); root.Path != "/" || root.ID == 0 || len(root.Processes) == 0 {
		t.Errorf("the root: id %d path %q, %d processes", root.ID, root.Path, len(root.Processes))
	}
}

// TestTasksAPIRequestsSharePasses sends many requests at once: they share
// passes as scrapes do, so the daemon runs a few passes for them, not one
// each.
func TestTasksAPIRequestsSharePasses(t *testing.T) {
	w := startDrillWorkload(t)
	// No background pass during the test: every pass is a request's.
	d := startDaemon(t, "--collect.interval=1h", "--web.max-requests=100")
	passes := func() float64 {
		mf := scrape(t, http.DefaultClient, "http://"+d.addr+"/metrics")["schedstatd_collections_total"]
		if mf == nil || len(mf.GetMetric()) != 1 {
			t.Fatal("no schedstatd_collections_total")
		}
		return mf.GetMetric()[0].GetCounter().GetValue()
	}
	const n = 40
	// Connections made beforehand, by requests that run no pass, so the
	// requests arrive together rather than one connection set-up apart.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
	var warm sync.WaitGroup
	for range n {
		warm.Add(1)
		go func() {
			defer warm.Done()
			if resp, err := client.Get("http://" + d.addr + "/healthz"); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	warm.Wait()
	before := passes()
	var wg sync.WaitGroup
	codes := make([]int, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := client.Get("http://" + d.addr + collector.TasksPath + "?id=" + strconv.FormatUint(w.inode, 10))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	close(start)
	wg.Wait()
	// The scrape that reads the counter runs one pass of its own.
	ran := passes() - before - 1
	for i, c := range codes {
		if c != http.StatusOK {
			t.Errorf("request %d: %d", i, c)
		}
	}
	t.Logf("%d concurrent requests ran %.0f passes", n, ran)
	// A request that comes while a pass runs waits for the next, which
	// serves every request queued by then: the passes follow how far
	// apart the requests come, which on a loaded machine (and under the
	// race detector) is several passes long (3-6 of 40 here at a quiet
	// moment, 10 at load 30), never one pass each.
	if ran < 1 || ran > n/2 {
		t.Errorf("%d concurrent requests ran %.0f passes; want at least 1 and at most %d", n, ran, n/2)
	}
}

// TestTasksAPIBehindTLSAndAuth serves the API under the web config of
// /metrics: TLS, and basic auth that refuses a request without the
// password; top drills down with the client config that passes both.
func TestTasksAPIBehindTLSAndAuth(t *testing.T) {
	e2e.RequireRoot(t)
	dir := testcg.Make(t, testcg.Default())
	idle := testproc.StartNamedIn(t, 0, dir, "")
	id := "/" + filepath.Base(dir)
	tmp := t.TempDir()
	cert := selfSigned(t, tmp)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	web := write("web.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  prometheus: "+string(hash)+"\n")
	good := write("good.yml", "basic_auth:\n  username: prometheus\n  password: s3cret\ntls_config:\n  ca_file: cert.pem\n")
	d := startDaemon(t, "--web.config.file="+web)

	pool := x509.NewCertPool()
	pool.AddCert(cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	u := "https://" + d.addr + collector.TasksPath + "?path=" + url.QueryEscape(id)
	resp, err := client.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the password: %s, want 401", resp.Status)
	}
	req, _ := http.NewRequest("GET", u, nil)
	req.SetBasicAuth("prometheus", "s3cret")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out collector.CgroupTasks
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("with the password: %s, %v", resp.Status, err)
	}
	if _, ok := process(out, idle.PID); !ok || out.Path != id {
		t.Errorf("the answer for %s has not its process %d: %+v", id, idle.PID, out)
	}

	r := runTop(t, "--once", "--interval=300ms", "--from=https://"+d.addr+"/metrics", "--http.config.file="+good, "--cgroup="+id)
	if r.code != 0 || !strings.Contains(r.stdout, "view: processes") || rowIndex(strings.Split(r.stdout, "\n"), strconv.Itoa(idle.PID)) < 0 {
		t.Errorf("top through TLS and auth: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
