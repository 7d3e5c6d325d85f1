package main

import (
	"crypto/rand"
	"encoding/hex"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/testkit/containerdtest"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
)

// TestSystemdHierarchy runs the daemon over the cgroup shapes systemd and
// kubelet's systemd driver make on a node, made here by hand (there may be
// no systemd): a service in system.slice, and a containerd container scope
// in a burstable pod's slice. Each cgroup of the tree gets its id and name
// labels as cgroupfs.ParseIdentity reads its path (the scope is named by
// its container id), and run seconds within 1% of its own cpu.stat
// usage_usec (cpuacct.usage on a hybrid machine), the slices' sums
// included. On a pure v2 machine with no such slices (the kernel matrix's
// VMs) the tree is made at the root, as systemd makes it; elsewhere in a
// test cgroup.
func TestSystemdHierarchy(t *testing.T) {
	hierarchy := testcg.Default()
	base := testcg.Make(t, hierarchy)
	if testcg.PureV2() && !exists(filepath.Join(testcg.Root, "system.slice")) && !exists(filepath.Join(testcg.Root, "kubepods.slice")) {
		base = testcg.Root
	}
	uid := containerdtest.NewUID(t)
	cid := randomHex(t, 32)
	service := "system.slice/schedstatd-test.service"
	pod := "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"
	scope := pod + "/cri-containerd-" + cid + ".scope"
	for _, top := range []string{"system.slice", "kubepods.slice"} {
		dir := filepath.Join(base, top)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { testcg.Remove(t, testcg.Dir(hierarchy), dir) })
	}
	for _, rel := range []string{service, "kubepods.slice/kubepods-burstable.slice", pod, scope} {
		if err := os.MkdirAll(filepath.Join(base, rel), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	d := startDaemon(t, "--collect.interval=200ms", "--container-runtime-endpoint=none")
	url := "http://" + d.addr + "/metrics"
	procs := []*testproc.Proc{
		testproc.StartIn(t, 2, filepath.Join(base, service)),
		testproc.StartIn(t, 2, filepath.Join(base, scope)),
	}
	time.Sleep(2 * time.Second) // see daemonMatchesKernel
	for _, p := range procs {
		p.Stop(t)
	}
	mfs := scrape(t, http.DefaultClient, url)
	root := testcg.Dir(hierarchy)
	wantName := map[string]string{
		service: "schedstatd-test.service",
		scope:   cid,
		pod:     "kubepods-burstable-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice",
	}
	for _, rel := range []string{"system.slice", service, "kubepods.slice", "kubepods.slice/kubepods-burstable.slice", pod, scope} {
		dir := filepath.Join(base, rel)
		id := ident(root, dir)
		l := seriesLabels(mfs, "container_cpu_schedstat_run_seconds_total", id)
		if l == nil {
			t.Errorf("no series for id=%q", id)
			continue
		}
		ident := cgroupfs.ParseIdentity(id)
		if l["name"] != ident.Name {
			t.Errorf("%s: name=%q, ParseIdentity says %q", id, l["name"], ident.Name)
		}
		if w, ok := wantName[rel]; ok && l["name"] != w {
			t.Errorf("%s: name=%q, want %q", id, l["name"], w)
		}
		run, _ := value(mfs, "container_cpu_schedstat_run_seconds_total", id)
		kernel := float64(testcg.Usage(t, dir)) / 1e9
		t.Logf("%s: name=%q run %.6fs, kernel %.6fs", id, l["name"], run, kernel)
		if kernel < 0.1 {
			t.Errorf("%s: the kernel counts %.6fs: the workload did not run there", id, kernel)
		}
		if math.Abs(run-kernel) > 0.01*kernel {
			t.Errorf("%s: run %.6fs is not within 1%% of the kernel's %.6fs", id, run, kernel)
		}
	}
	if id := ident(root, filepath.Join(base, scope)); cgroupfs.ParseIdentity(id).PodUID != uid {
		t.Errorf("ParseIdentity(%q).PodUID = %q, want %q", id, cgroupfs.ParseIdentity(id).PodUID, uid)
	}
}

// ident returns dir's cgroup path in the hierarchy mounted at root.
func ident(root, dir string) string { return "/" + strings.TrimPrefix(dir, root+"/") }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// randomHex returns n random bytes in hex, as a container id is made.
func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
