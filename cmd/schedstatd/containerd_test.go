package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/schedstatd/schedstatd/internal/testkit/containerdtest"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// spinImage is a second image, so that each container's image label is
// seen to be its own.
// Its entrypoint differs from BusyboxImage's, which makes its id differ.
var spinImage = containerdtest.Image{Name: "registry.schedstatd.test/tools/spin:2", Entrypoint: []string{containerdtest.Busybox, "sh"}}

// Container commands. spinCmd keeps a CPU busy. choresCmd does a little
// work in a short-lived child process every 100 ms, so its cgroup's time
// is mostly that of processes that exit between passes.
var (
	spinCmd   = []string{"/bin/sh", "-c", "while :; do :; done"}
	choresCmd = []string{"/bin/sh", "-c", "while :; do x=$(i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; echo $i); sleep 0.1; done"}
)

// sandboxImageLabel is the image label of a pod's sandbox: the sandbox
// (pause) image, from the runtime's status, as cAdvisor shows it.
var sandboxImageLabel = containerdtest.PauseImage.Name

// ctdScraper scrapes a daemon that watches a real containerd.
type ctdScraper struct {
	t      *testing.T
	d      *daemon
	url    string
	client *http.Client
	// root is the cgroup under which the test's cgroups are.
	root string
}

// scrape scrapes the daemon once, completely: a scrape that lacks a series
// of root in any cgroup family is taken again, for up to 10 s. (A cgroup
// that another test on the machine names with invalid UTF-8 makes the
// daemon drop series of other cgroups from its answers, issue 16.)
func (s *ctdScraper) scrape() map[string]*dto.MetricFamily {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mfs := scrape(s.t, s.client, s.url)
		missing := ""
		for _, family := range cgroupFamilies {
			if seriesLabels(mfs, family, s.root) == nil {
				missing = family
			}
		}
		if missing == "" || time.Now().After(deadline) {
			return mfs
		}
		s.t.Logf("a scrape without %s{id=%q}: taken again", missing, s.root)
		time.Sleep(50 * time.Millisecond)
	}
}

// await scrapes every 50 ms until ok holds of a scrape, which it
// returns; after timeout it fails the test with what last failed.
func (s *ctdScraper) await(what string, timeout time.Duration, ok func(map[string]*dto.MetricFamily) string) map[string]*dto.MetricFamily {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		mfs := s.scrape()
		why := ok(mfs)
		if why == "" {
			return mfs
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: not within %v: %s\ndaemon log:\n%s", what, timeout, why, s.d.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// containerLabels is the label set of a container's own series.
func containerLabels(c *containerdtest.Container) map[string]string {
	return map[string]string{"id": c.CgroupID(), "name": c.ID, "container": c.Name, "pod": c.Pod.Name, "namespace": c.Pod.Namespace, "image": c.Image}
}

// podLabels is the label set of a pod's cgroup's series.
func podLabels(p *containerdtest.Pod) map[string]string {
	return map[string]string{"id": p.CgroupID(), "name": filepath.Base(p.CgroupID()), "container": "", "pod": p.Name, "namespace": p.Namespace, "image": ""}
}

// sandboxLabels is the label set of a pod's sandbox cgroup's series.
func sandboxLabels(p *containerdtest.Pod) map[string]string {
	return map[string]string{"id": p.SandboxCgroupID(), "name": p.SandboxID, "container": "", "pod": p.Name, "namespace": p.Namespace, "image": sandboxImageLabel}
}

// plainLabels is the label set of a cgroup no container or pod owns.
func plainLabels(id string) map[string]string {
	return map[string]string{"id": id, "name": filepath.Base(id), "container": "", "pod": "", "namespace": "", "image": ""}
}

// labelDiff returns how the series of every cgroup family for each id of
// want differ from want's label sets, or "".
func labelDiff(mfs map[string]*dto.MetricFamily, want map[string]map[string]string) string {
	var diffs []string
	for _, family := range cgroupFamilies {
		for id, w := range want {
			got := seriesLabels(mfs, family, id)
			if got == nil {
				diffs = append(diffs, fmt.Sprintf("%s: no series of %s", family, id))
			} else if d := cmp.Diff(w, got); d != "" {
				diffs = append(diffs, fmt.Sprintf("%s{id=%q} (-want +got):\n%s", family, id, d))
			}
		}
	}
	return strings.Join(diffs, "\n")
}

// runtimeUp returns "" when schedstatd_runtime_up is want.
func runtimeUp(want float64) func(map[string]*dto.MetricFamily) string {
	return func(mfs map[string]*dto.MetricFamily) string {
		if got := gauge(mfs, "schedstatd_runtime_up"); got != want {
			return fmt.Sprintf("schedstatd_runtime_up is %v, want %v", got, want)
		}
		return ""
	}
}

// usageSeconds reads the CPU counter of the container's cgroup in the
// cpuacct hierarchy, in seconds.
// freeze sets the v1 freezer of each container's cgroup to state (FROZEN
// or THAWED) and waits until it is there; a test that froze thaws at its
// end whatever happens.
func freeze(t *testing.T, ctrs []*containerdtest.Container, state string) {
	t.Helper()
	for _, c := range ctrs {
		file := filepath.Join(containerdtest.CgroupDir("freezer", c.CgroupID()), "freezer.state")
		if state == "FROZEN" {
			t.Cleanup(func() { os.WriteFile(file, []byte("THAWED"), 0) })
		}
		if err := os.WriteFile(file, []byte(state), 0); err != nil {
			t.Fatalf("freeze %s: %v", c.Name, err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(string(b)) == state {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: freezer %s, not %s after 10s", c.Name, strings.TrimSpace(string(b)), state)
			}
		}
	}
}

func usageSeconds(t *testing.T, c *containerdtest.Container) float64 {
	return float64(testcg.Usage(t, containerdtest.CgroupDir("cpuacct", c.CgroupID()))) / 1e9
}

// TestContainerdPodsEndToEnd runs the daemon binary against a real
// containerd (Debian's, with runc and the cgroupfs driver) that runs two
// pods made through its CRI as kubelet makes them, one burstable
// (<root>/kubepods/burstable/pod<uid>) and one guaranteed
// (<root>/kubepods/pod<uid>), and checks:
//   - the exact label set of every series of each pod's, sandbox's and
//     container's cgroup, the image named from containerd's image list
//     (containerd 1.6 lists a container's image by id only);
//   - each container's run seconds against its cgroup's own CPU counter;
//   - a restart of containerd: schedstatd_runtime_up goes to 0 and back to
//     1, the labels stay as they were throughout, and the counters never
//     go back;
//   - a container started after the restart is labelled within a refresh
//     of its cgroup's first scrape.
func TestContainerdPodsEndToEnd(t *testing.T) {
	c := containerdtest.Start(t, spinImage)
	batch := c.RunPod("report-28190415-x7k2p", "batch", containerdtest.Burstable)
	shop := c.RunPod("web-0", "shop", containerdtest.Guaranteed)
	crunch := c.StartContainer(batch, "crunch", containerdtest.BusyboxImage.Name, spinCmd...)
	web := c.StartContainer(shop, "web", spinImage.Name, choresCmd...)
	ctrs := []*containerdtest.Container{crunch, web}

	s := &ctdScraper{t: t, client: &http.Client{Timeout: 10 * time.Second}, root: c.CgroupRoot}
	s.d = startDaemon(t, "--collect.interval=200ms", "--container-runtime-endpoint=unix://"+c.Socket)
	s.url = "http://" + s.d.addr + "/metrics"

	want := map[string]map[string]string{
		c.CgroupRoot:                         plainLabels(c.CgroupRoot),
		c.CgroupRoot + "/kubepods":           plainLabels(c.CgroupRoot + "/kubepods"),
		c.CgroupRoot + "/kubepods/burstable": plainLabels(c.CgroupRoot + "/kubepods/burstable"),
		batch.CgroupID():                     podLabels(batch),
		batch.SandboxCgroupID():              sandboxLabels(batch),
		crunch.CgroupID():                    containerLabels(crunch),
		shop.CgroupID():                      podLabels(shop),
		shop.SandboxCgroupID():               sandboxLabels(shop),
		web.CgroupID():                       containerLabels(web),
	}
	t.Run("labels", func(t *testing.T) {
		s.t = t
		mfs := s.await("every cgroup labelled", 20*time.Second, func(mfs map[string]*dto.MetricFamily) string {
			if why := runtimeUp(1)(mfs); why != "" {
				return why
			}
			return labelDiff(mfs, want)
		})
		if n := gauge(mfs, "schedstatd_runtime_containers"); n != 2 {
			t.Errorf("schedstatd_runtime_containers = %v, want the 2 containerd runs", n)
		}
	})

	t.Run("run vs usage", func(t *testing.T) {
		s.t = t
		// sample is a scrape's run seconds of each container, with its
		// cgroup's CPU counter read just before and just after it.
		type sample struct{ run, before, after []float64 }
		take := func() sample {
			var sm sample
			for _, ctr := range ctrs {
				sm.before = append(sm.before, usageSeconds(t, ctr))
			}
			mfs := s.scrape()
			for i, ctr := range ctrs {
				sm.after = append(sm.after, usageSeconds(t, ctr))
				run, ok := value(mfs, "container_cpu_schedstat_run_seconds_total", ctr.CgroupID())
				if !ok {
					t.Fatalf("%s: no run seconds", ctrs[i].Name)
				}
				sm.run = append(sm.run, run)
			}
			return sm
		}
		// The chores' processes that exited before the daemon started
		// are not its to count: compare what both counted since a
		// scrape, over long enough for the chores to run many short
		// processes. Each scrape is taken with the containers frozen
		// and every exited task's record in: a task's last stretch
		// reaches the daemon when the kernel frees it, an RCU callback
		// that a loaded machine runs tens of milliseconds late.
		frozenTake := func() sample {
			t.Helper()
			freeze(t, ctrs, "FROZEN")
			defer freeze(t, ctrs, "THAWED")
			testproc.FreeMarkers(t)
			time.Sleep(3 * 200 * time.Millisecond) // the daemon's interval: drained and passed
			return take()
		}
		s0 := frozenTake()
		time.Sleep(3 * time.Second)
		s1 := frozenTake()
		for i, ctr := range ctrs {
			run := s1.run[i] - s0.run[i]
			// The cgroup's counter grew by at least min and at most max
			// between the two scrapes.
			lo, hi := s1.before[i]-s0.after[i], s1.after[i]-s0.before[i]
			t.Logf("%s: run %.4fs in a window in which cpuacct.usage grew %.4f-%.4fs: run/usage %.4f-%.4f",
				ctr.Name, run, lo, hi, run/hi, run/lo)
			// Frozen at both ends, with every record in, the two agree
			// (1.0000 here): 0.1% is room for a dead task's counters,
			// taken a little past the cgroup counter's last update. Below,
			// 1% is room for the records sched_process_free sometimes
			// never sends (exitcapture's TestGapFreeHookEveryThread, a
			// known gap: 0.13% of a container's time once here).
			if run > 1.001*hi || run < 0.99*lo {
				t.Errorf("%s: run %.4fs, want within [0.99, 1.001] of the cgroup's %.4f-%.4fs", ctr.Name, run, lo, hi)
			}
			// Since the start of the spinning container, whose time is all
			// in one live process, the two match too.
			if ctr == crunch && (s1.run[i] > 1.005*s1.after[i] || s1.run[i] < 0.98*s1.before[i]) {
				t.Errorf("%s: run %.4fs in all, cpuacct.usage %.4f-%.4fs", ctr.Name, s1.run[i], s1.before[i], s1.after[i])
			}
		}
	})

	t.Run("runtime restart", func(t *testing.T) {
		s.t = t
		before := s.scrape()
		c.Stop()
		// The daemon asks the runtime when a scrape meets a container id
		// it does not know, and every 30 s: a cgroup named like a
		// container that runc started meanwhile makes the daemon notice
		// the runtime is gone at once.
		unknown := batch.CgroupID() + "/" + strings.Repeat("ab", 32)
		if err := os.Mkdir(containerdtest.CgroupDir("cpuacct", unknown), 0o755); err != nil {
			t.Fatal(err)
		}
		down := s.await("runtime down", 10*time.Second, runtimeUp(0))
		if d := labelDiff(down, want); d != "" {
			t.Errorf("labels while containerd is down:\n%s", d)
		}
		wantUnknown := map[string]string{"id": unknown, "name": filepath.Base(unknown), "container": "", "pod": batch.Name, "namespace": batch.Namespace, "image": ""}
		if d := cmp.Diff(wantUnknown, seriesLabels(down, "container_schedstat_tasks", unknown)); d != "" {
			t.Errorf("a container cgroup new while containerd is down (-want +got):\n%s", d)
		}

		c.Restart()
		// A container started after the restart asks for a refresh.
		late := c.StartContainer(shop, "late", containerdtest.BusyboxImage.Name, spinCmd...)
		want[late.CgroupID()] = containerLabels(late)
		first := time.Time{}
		var firstLabels map[string]string
		up := s.await("runtime up again, the new container named", 15*time.Second, func(mfs map[string]*dto.MetricFamily) string {
			if l := seriesLabels(mfs, "container_schedstat_tasks", late.CgroupID()); l != nil && first.IsZero() {
				first, firstLabels = time.Now(), l
			}
			if why := runtimeUp(1)(mfs); why != "" {
				return why
			}
			return labelDiff(mfs, want)
		})
		t.Logf("the new container's first scrape: labels %v; all labelled %v after it", firstLabels, time.Since(first).Round(time.Millisecond))
		if n := gauge(up, "schedstatd_runtime_containers"); n != 3 {
			t.Errorf("schedstatd_runtime_containers = %v after the restart, want 3", n)
		}
		for _, family := range []string{"container_cpu_schedstat_run_seconds_total", "container_cpu_schedstat_runqueue_seconds_total", "container_cpu_schedstat_run_periods_total"} {
			for _, ctr := range ctrs {
				b, _ := value(before, family, ctr.CgroupID())
				a, _ := value(up, family, ctr.CgroupID())
				if a < b {
					t.Errorf("%s{container=%q} went from %v to %v across the restart", family, ctr.Name, b, a)
				}
			}
		}
		log := s.d.log()
		if n := strings.Count(log, "container runtime unavailable"); n != 1 {
			t.Errorf("%d lines say the runtime is unavailable, want 1:\n%s", n, log)
		}
		if n := strings.Count(log, "container runtime answers"); n != 2 {
			t.Errorf("%d lines say the runtime answers, want 2 (start and after the restart):\n%s", n, log)
		}
	})
}
