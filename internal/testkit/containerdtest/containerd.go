package containerdtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/schedstatd/schedstatd/internal/imagebuild"
	"github.com/schedstatd/schedstatd/internal/testkit/e2e"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Namespace is the containerd namespace the CRI keeps its pods in.
const Namespace = "k8s.io"

// The images every Containerd has: PauseImage is the sandbox image
// (containerd's sandbox_image), BusyboxImage one to run containers of.
var (
	PauseImage   = Image{Name: "localhost/schedstatd/pause:1", Entrypoint: []string{Busybox, "sleep", "2147483647"}}
	BusyboxImage = Image{Name: "localhost/schedstatd/busybox:1.35", Entrypoint: []string{"/bin/sh"}}
)

// Tools are the programs a Containerd runs, each with its Debian package.
var Tools = []struct{ Path, Package string }{
	{"containerd", "containerd"},
	{"containerd-shim-runc-v2", "containerd"},
	{"ctr", "containerd"},
	{"runc", "runc"},
	{Busybox, "busybox-static"},
}

var seq atomic.Int32

// Containerd is a containerd run by a test. Its methods are for the test's
// goroutine.
type Containerd struct {
	t testing.TB
	// Dir holds its config, root, state, socket and log.
	Dir string
	// Socket is the path of its gRPC (and CRI) socket.
	Socket string
	// CgroupRoot is the cgroup the pods' cgroups are made under, in every
	// hierarchy, as kubelet's --cgroup-root: pods are
	// CgroupRoot/kubepods/<qos>/pod<uid>. It is the test's own, so
	// assertions and clean-up touch no other cgroup.
	CgroupRoot string
	// Runtime and Images are CRI clients of it.
	Runtime runtimeapi.RuntimeServiceClient
	Images  runtimeapi.ImageServiceClient

	conn   *grpc.ClientConn
	cmd    *exec.Cmd
	done   chan error
	images []Image
	pods   []*Pod
}

// Start starts a containerd of its own for t, with PauseImage, BusyboxImage
// and extra imported, and waits until its CRI answers. It is stopped, and
// all it made removed, when the test ends.
func Start(t testing.TB, extra ...Image) *Containerd {
	t.Helper()
	e2e.RequireRoot(t)
	for _, tool := range Tools {
		if _, err := exec.LookPath(tool.Path); err != nil {
			e2e.Unavailable(t, fmt.Sprintf("no %s (Debian package %s): %v", tool.Path, tool.Package, err))
		}
	}
	if err := imagebuild.CheckStatic(Busybox); err != nil {
		e2e.Unavailable(t, fmt.Sprintf("%v: the images need the static one of Debian package busybox-static", err))
	}
	// A unix socket path has at most 107 bytes; t.TempDir's can be longer.
	dir, err := os.MkdirTemp("", "ctd")
	if err != nil {
		t.Fatal(err)
	}
	c := &Containerd{
		t:          t,
		Dir:        dir,
		Socket:     filepath.Join(dir, "containerd.sock"),
		CgroupRoot: fmt.Sprintf("/schedstatd-containerd-%d-%d", os.Getpid(), seq.Add(1)),
		images:     append([]Image{PauseImage, BusyboxImage}, extra...),
	}
	t.Cleanup(c.cleanup)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(c.config()), 0o644); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("unix://"+c.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()),
		// containerd comes up in a fraction of a second: do not back off
		// for the second grpc waits by default after the first refusal.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, MaxDelay: 200 * time.Millisecond},
			MinConnectTimeout: 2 * time.Second,
		}))
	if err != nil {
		t.Fatal(err)
	}
	c.conn = conn
	c.Runtime = runtimeapi.NewRuntimeServiceClient(conn)
	c.Images = runtimeapi.NewImageServiceClient(conn)
	c.Restart()

	archive := filepath.Join(dir, "images.tar")
	if err := writeArchive(archive, c.images); err != nil {
		t.Fatalf("images: %v", err)
	}
	if out, err := exec.Command("ctr", "--address", c.Socket, "--namespace", Namespace,
		"images", "import", "--snapshotter", "overlayfs", archive).CombinedOutput(); err != nil {
		t.Fatalf("ctr images import: %v\n%s", err, out)
	}
	// The CRI learns of imported images from containerd's events.
	for _, img := range c.images {
		c.waitFor("image "+img.Name, func(ctx context.Context) error {
			r, err := c.Images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: img.Name}})
			if err == nil && r.GetImage() == nil {
				err = fmt.Errorf("not listed")
			}
			return err
		})
	}
	return c
}

// config returns containerd's config: everything under c.Dir, the CRI's
// runc runtime with the cgroupfs driver, no CNI, and what a root without
// CAP_SYS_RESOURCE needs (restrict_oom_score_adj).
func (c *Containerd) config() string {
	d := c.Dir
	return `version = 2
root = "` + d + `/root"
state = "` + d + `/state"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "` + c.Socket + `"

[ttrpc]
  address = "` + c.Socket + `.ttrpc"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "` + PauseImage.Name + `"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "runc"
        Root = "` + d + `/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "` + d + `/cni/bin"
    conf_dir = "` + d + `/cni/conf"
`
}

// Restart starts containerd, stopping it first if it runs, and waits until
// its CRI answers. Containers keep running meanwhile, in their shims.
func (c *Containerd) Restart() {
	c.t.Helper()
	c.Stop()
	logf, err := os.OpenFile(filepath.Join(c.Dir, "containerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command("containerd", "--config", filepath.Join(c.Dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a ^C to the test does not reach it before
	// the clean-up does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.cmd, c.done = cmd, make(chan error, 1)
	go func() { c.done <- cmd.Wait() }()
	c.waitFor("containerd's CRI", func(ctx context.Context) error {
		select {
		case err := <-c.done:
			c.done <- err
			return fmt.Errorf("containerd exited: %v", err)
		default:
		}
		_, err := c.Runtime.Version(ctx, &runtimeapi.VersionRequest{})
		return err
	})
}

// Running reports whether containerd runs.
func (c *Containerd) Running() bool {
	if c.cmd == nil {
		return false
	}
	select {
	case err := <-c.done:
		c.done <- err
		return false
	default:
		return true
	}
}

// Stop stops containerd with SIGTERM (SIGKILL after 10 s) and waits for
// it; the shims and their containers go on. It does nothing if containerd
// does not run.
func (c *Containerd) Stop() {
	if !c.Running() {
		return
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.t.Errorf("containerd did not stop within 10s of SIGTERM; killing it")
		c.cmd.Process.Kill()
		<-c.done
	}
	c.done <- nil
}

// Kill kills containerd with SIGKILL and waits for it, as a crash would.
func (c *Containerd) Kill() {
	if !c.Running() {
		return
	}
	c.cmd.Process.Kill()
	<-c.done
	c.done <- nil
}

// Log returns containerd's log so far.
func (c *Containerd) Log() string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "containerd.log"))
	return string(b)
}

// waitFor calls f, each call with a 2 s deadline, until it succeeds or
// 30 s have passed, and then fails the test with containerd's log.
func (c *Containerd) waitFor(what string, f func(context.Context) error) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := f(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || strings.Contains(err.Error(), "containerd exited") {
			c.t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// callContext returns a context for one CRI call.
func callContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}
