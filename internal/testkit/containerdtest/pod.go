package containerdtest

import (
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Labels kubelet puts on the sandboxes and containers it asks the runtime
// for.
const (
	LabelContainerName = "io.kubernetes.container.name"
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
)

// QoS classes, as the cgroup under kubepods that kubelet's cgroupfs
// driver makes for them; a guaranteed pod's cgroup is right under
// kubepods.
const (
	Guaranteed = ""
	Burstable  = "burstable"
	BestEffort = "besteffort"
)

// Pod is a pod sandbox run through the CRI.
type Pod struct {
	Name, Namespace, UID string
	// QoS is the pod's QoS class cgroup, Guaranteed, Burstable or
	// BestEffort.
	QoS string
	// SandboxID is the id containerd gave the sandbox, the name of its
	// (pause container's) cgroup.
	SandboxID string
	// CgroupParent is the pod's cgroup, relative to a hierarchy's root.
	CgroupParent string
	// Config is what RunPodSandbox was given.
	Config *runtimeapi.PodSandboxConfig
}

// Container is a container run through the CRI in a Pod.
type Container struct {
	// ID is the id containerd gave it, the name of its cgroup.
	ID, Name string
	// Image is the image's name, ImageID its id (sha256:...), which is
	// what kubelet passes the runtime.
	Image, ImageID string
	Pod            *Pod
}

// CgroupID returns the cgroup path of the pod's cgroup relative to a
// hierarchy's root: the id label schedstatd gives it.
func (p *Pod) CgroupID() string { return p.CgroupParent }

// SandboxCgroupID returns the id label of the sandbox's cgroup.
func (p *Pod) SandboxCgroupID() string { return p.CgroupParent + "/" + p.SandboxID }

// CgroupID returns the id label of the container's cgroup.
func (c *Container) CgroupID() string { return c.Pod.CgroupParent + "/" + c.ID }

// CgroupDir returns the directory of the cgroup id (a path relative to a
// hierarchy's root, such as a CgroupID) in hierarchy ("cpuacct",
// "unified", ...).
func CgroupDir(hierarchy, id string) string {
	return filepath.Join(cgroupRoot, hierarchy, id)
}

// NewUID returns a random pod uid, as the API server makes them.
func NewUID(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// RunPod runs a pod sandbox as kubelet does with the cgroupfs driver: its
// cgroup parent CgroupRoot/kubepods/<qos>/pod<uid>, kubelet's labels,
// host networking (there is no CNI) and no hostname. It is removed when
// the test ends, if the test does not remove it first.
func (c *Containerd) RunPod(name, namespace, qos string) *Pod {
	c.t.Helper()
	p := &Pod{Name: name, Namespace: namespace, UID: NewUID(c.t), QoS: qos}
	p.CgroupParent = filepath.Join(c.CgroupRoot, "kubepods", qos, "pod"+p.UID)
	p.Config = &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: namespace, Uid: p.UID},
		LogDirectory: filepath.Join(c.Dir, "pods", namespace+"_"+name+"_"+p.UID),
		Labels:       map[string]string{LabelPodName: name, LabelPodNamespace: namespace, LabelPodUID: p.UID},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: p.CgroupParent,
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
			},
		},
	}
	ctx, cancel := callContext()
	defer cancel()
	r, err := c.Runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: p.Config})
	if err != nil {
		c.t.Fatalf("RunPodSandbox %s/%s: %v", namespace, name, err)
	}
	p.SandboxID = r.GetPodSandboxId()
	c.pods = append(c.pods, p)
	return p
}

// StartContainer creates and starts a container named name in pod p, of
// the image named image, running command, as kubelet does: kubelet's
// labels, the image by its id, and what the pod spec said as the
// user-specified image.
func (c *Containerd) StartContainer(p *Pod, name, image string, command ...string) *Container {
	c.t.Helper()
	ctx, cancel := callContext()
	defer cancel()
	st, err := c.Images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil || st.GetImage() == nil {
		c.t.Fatalf("ImageStatus %s: %v (image %v)", image, err, st.GetImage())
	}
	ctr := &Container{Name: name, Image: image, ImageID: st.GetImage().GetId(), Pod: p}
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: ctr.ImageID, UserSpecifiedImage: image},
		Command:  command,
		LogPath:  name + "/0.log",
		Labels: map[string]string{
			LabelContainerName: name,
			LabelPodName:       p.Name,
			LabelPodNamespace:  p.Namespace,
			LabelPodUID:        p.UID,
		},
		Linux: &runtimeapi.LinuxContainerConfig{
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
			},
		},
	}
	r, err := c.Runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: p.SandboxID, Config: cfg, SandboxConfig: p.Config})
	if err != nil {
		c.t.Fatalf("CreateContainer %s in %s/%s: %v", name, p.Namespace, p.Name, err)
	}
	ctr.ID = r.GetContainerId()
	if _, err := c.Runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctr.ID}); err != nil {
		c.t.Fatalf("StartContainer %s in %s/%s: %v", name, p.Namespace, p.Name, err)
	}
	return ctr
}

// WaitExited waits up to timeout for the container to exit, and returns
// its exit code.
func (c *Containerd) WaitExited(ctr *Container, timeout time.Duration) int32 {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := callContext()
		r, err := c.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctr.ID})
		cancel()
		if err != nil {
			c.t.Fatalf("ContainerStatus %s: %v", ctr.Name, err)
		}
		if s := r.GetStatus(); s.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
			return s.GetExitCode()
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("container %s did not exit within %v: %v", ctr.Name, timeout, r.GetStatus())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// RemovePod stops and removes the pod's sandbox and containers, as kubelet
// does when a pod is deleted, then removes the pod's cgroup, which is
// kubelet's to remove.
func (c *Containerd) RemovePod(p *Pod) {
	c.t.Helper()
	if err := c.removePod(p); err != nil {
		c.t.Fatal(err)
	}
}
