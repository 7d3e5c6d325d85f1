package containerdtest

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ImportArchive imports the OCI archive path, as `ctr -n k8s.io images
// import` does, and waits until the CRI lists each image of names.
func (c *Containerd) ImportArchive(path string, names ...string) {
	c.t.Helper()
	if out, err := exec.Command("ctr", "--address", c.Socket, "--namespace", Namespace,
		"images", "import", "--snapshotter", "overlayfs", path).CombinedOutput(); err != nil {
		c.t.Fatalf("ctr images import %s: %v\n%s", path, err, out)
	}
	for _, name := range names {
		c.waitFor("image "+name, func(ctx context.Context) error {
			r, err := c.Images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: name}})
			if err == nil && r.GetImage() == nil {
				err = fmt.Errorf("not listed")
			}
			return err
		})
	}
}

// PodCgroupParent returns the cgroup kubelet's cgroupfs driver makes for
// a pod of uid in QoS class qos: CgroupRoot/kubepods/<qos>/pod<uid>.
func (c *Containerd) PodCgroupParent(qos, uid string) string {
	return filepath.Join(c.CgroupRoot, "kubepods", qos, "pod"+uid)
}

// RunPodSandbox runs a pod sandbox of cfg, a config made as kubelet makes
// one (its metadata, labels, cgroup parent, security context), and
// removes it when the test ends, if the test does not remove it first.
// Its cgroup parent must be under CgroupRoot.
func (c *Containerd) RunPodSandbox(cfg *runtimeapi.PodSandboxConfig, qos string) *Pod {
	c.t.Helper()
	md := cfg.GetMetadata()
	p := &Pod{Name: md.GetName(), Namespace: md.GetNamespace(), UID: md.GetUid(), QoS: qos, CgroupParent: cfg.GetLinux().GetCgroupParent(), Config: cfg}
	if !strings.HasPrefix(p.CgroupParent, c.CgroupRoot+"/") {
		c.t.Fatalf("pod %s/%s: cgroup parent %q is not under %s", p.Namespace, p.Name, p.CgroupParent, c.CgroupRoot)
	}
	ctx, cancel := callContext()
	defer cancel()
	r, err := c.Runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		c.t.Fatalf("RunPodSandbox %s/%s: %v", p.Namespace, p.Name, err)
	}
	p.SandboxID = r.GetPodSandboxId()
	c.pods = append(c.pods, p)
	return p
}

// StartContainerConfig creates and starts a container of cfg in pod p.
// cfg names its image by name (cfg.Image.Image); as kubelet does, the
// runtime is given the image's id, and the name as the user-specified
// image.
func (c *Containerd) StartContainerConfig(p *Pod, cfg *runtimeapi.ContainerConfig) *Container {
	c.t.Helper()
	ctx, cancel := callContext()
	defer cancel()
	image := cfg.GetImage().GetImage()
	st, err := c.Images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil || st.GetImage() == nil {
		c.t.Fatalf("ImageStatus %s: %v (image %v)", image, err, st.GetImage())
	}
	ctr := &Container{Name: cfg.GetMetadata().GetName(), Image: image, ImageID: st.GetImage().GetId(), Pod: p}
	cfg.Image = &runtimeapi.ImageSpec{Image: ctr.ImageID, UserSpecifiedImage: image}
	r, err := c.Runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: p.SandboxID, Config: cfg, SandboxConfig: p.Config})
	if err != nil {
		c.t.Fatalf("CreateContainer %s in %s/%s: %v", ctr.Name, p.Namespace, p.Name, err)
	}
	ctr.ID = r.GetContainerId()
	if _, err := c.Runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctr.ID}); err != nil {
		c.t.Fatalf("StartContainer %s in %s/%s: %v", ctr.Name, p.Namespace, p.Name, err)
	}
	return ctr
}
