package containerdtest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/imagebuild"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// spin is a container command that keeps one CPU busy.
var spin = []string{"/bin/sh", "-c", "while :; do :; done"}

// TestPodsInKubeletCgroups runs a burstable and a guaranteed pod and
// checks that their sandboxes and containers run in kubelet's
// cgroupfs-driver cgroups in every hierarchy, and what containerd lists of
// them.
func TestPodsInKubeletCgroups(t *testing.T) {
	c := Start(t)
	burstable := c.RunPod("web-0", "shop", Burstable)
	guaranteed := c.RunPod("db-0", "shop", Guaranteed)
	web := c.StartContainer(burstable, "web", BusyboxImage.Name, spin...)
	db := c.StartContainer(guaranteed, "db", BusyboxImage.Name, "/bin/sh", "-c", "sleep 600")

	for _, tc := range []struct{ id, want string }{
		{burstable.SandboxCgroupID(), c.CgroupRoot + "/kubepods/burstable/pod" + burstable.UID + "/" + burstable.SandboxID},
		{web.CgroupID(), c.CgroupRoot + "/kubepods/burstable/pod" + burstable.UID + "/" + web.ID},
		{guaranteed.SandboxCgroupID(), c.CgroupRoot + "/kubepods/pod" + guaranteed.UID + "/" + guaranteed.SandboxID},
		{db.CgroupID(), c.CgroupRoot + "/kubepods/pod" + guaranteed.UID + "/" + db.ID},
	} {
		if tc.id != tc.want {
			t.Errorf("cgroup %s, want %s", tc.id, tc.want)
		}
		for _, h := range []string{"cpuacct", "cpu", "memory", "pids", "unified"} {
			b, err := os.ReadFile(filepath.Join(CgroupDir(h, tc.id), "cgroup.procs"))
			if err != nil {
				t.Errorf("%s: %v", h, err)
			} else if len(strings.Fields(string(b))) == 0 {
				t.Errorf("%s: no process in %s", h, tc.id)
			}
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.GetContainers()); n != 2 {
		t.Errorf("%d containers listed, want 2", n)
	}
	for _, ctr := range r.GetContainers() {
		// containerd 1.6 keeps the image id kubelet passed and drops the
		// user-specified name: a client must name it from ListImages.
		if got := ctr.GetImage().GetImage(); got != web.ImageID {
			t.Errorf("container %s: image %q, want the id %q", ctr.GetMetadata().GetName(), got, web.ImageID)
		}
		if got := ctr.GetImage().GetUserSpecifiedImage(); got != "" {
			t.Logf("container %s: user-specified image %q: this containerd keeps it", ctr.GetMetadata().GetName(), got)
		}
	}
	imgs, err := c.Images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, img := range imgs.GetImages() {
		tags = append(tags, img.GetRepoTags()...)
	}
	slices.Sort(tags)
	if want := []string{BusyboxImage.Name, PauseImage.Name}; !slices.Equal(tags, want) {
		t.Errorf("image tags %q, want %q", tags, want)
	}

	c.RemovePod(burstable)
	for _, h := range hierarchies() {
		if _, err := os.Stat(filepath.Join(h, burstable.CgroupParent)); err == nil {
			t.Errorf("%s: the pod's cgroup is left after RemovePod", filepath.Join(h, burstable.CgroupParent))
		}
	}
}

// TestCleanUpAfterCrash kills containerd with a pod running, as a crash
// would, and checks that the clean-up at the end of the test still
// removes the shims and their sockets, the processes, the cgroups and the
// mounts.
func TestCleanUpAfterCrash(t *testing.T) {
	var c *Containerd
	var sockets []string
	t.Run("crash", func(t *testing.T) {
		c = Start(t)
		p := c.RunPod("crash-0", "default", Burstable)
		c.StartContainer(p, "spin", BusyboxImage.Name, spin...)
		paths := unixSocketPaths()
		for _, path := range paths {
			if strings.HasPrefix(path, shimSocketDir+"/") {
				sockets = append(sockets, path)
			}
		}
		if len(c.processes()) < 2 || len(mountsUnder(c.Dir)) == 0 {
			t.Fatalf("want containerd, a shim and mounts; processes %v, mounts %q", c.processes(), mountsUnder(c.Dir))
		}
		c.Kill()
	})
	if c == nil {
		t.Fatal("containerd did not start")
	}
	if left := c.leftovers(); len(left) > 0 {
		t.Errorf("left behind: %q", left)
	}
	// Other containerds' shims may have sockets there too; only those of
	// this test's shim are gone.
	var gone int
	for _, s := range sockets {
		if _, err := os.Stat(s); err != nil {
			gone++
		}
	}
	if gone == 0 {
		t.Errorf("no shim socket of %q removed", sockets)
	}
}

// TestCheckStatic tells Debian's static busybox from a dynamically linked
// program, which could not run in an image of one file.
func TestCheckStatic(t *testing.T) {
	if _, err := os.Stat(Busybox); err != nil {
		e2e.Unavailable(t, "no "+Busybox+" (Debian package busybox-static)")
	}
	if err := imagebuild.CheckStatic(Busybox); err != nil {
		t.Errorf("%s: %v", Busybox, err)
	}
	if err := imagebuild.CheckStatic("/bin/sh"); err == nil {
		t.Errorf("/bin/sh (dash) passes as static")
	}
}
