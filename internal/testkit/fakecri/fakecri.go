// Package fakecri is a container runtime for tests: the runtime side of the
// Kubernetes Container Runtime Interface (the RuntimeService and
// ImageService of k8s.io/cri-api), served by a real gRPC server on a unix
// socket in the test process. It answers Version, ListPodSandbox,
// ListContainers and ListImages from lists the test fills and edits, and
// counts the calls. Every other CRI call fails as unimplemented.
//
// It names pods and containers the way containerd lists those that kubelet
// created, so a client sees what it would see on a node.
package fakecri

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Labels kubelet puts on every container it asks the runtime to create.
const (
	// LabelContainerName is the container's name in the pod spec.
	LabelContainerName = "io.kubernetes.container.name"
	// LabelPodName is the pod's name.
	LabelPodName = "io.kubernetes.pod.name"
	// LabelPodNamespace is the pod's namespace.
	LabelPodNamespace = "io.kubernetes.pod.namespace"
	// LabelPodUID is the pod's uid, with dashes.
	LabelPodUID = "io.kubernetes.pod.uid"
)

// What Version answers.
const (
	// RuntimeName is the runtime's name.
	RuntimeName = "fake"
	// RuntimeVersion is the runtime's version.
	RuntimeVersion = "1.0"
	// RuntimeAPIVersion is the CRI version it serves.
	RuntimeAPIVersion = "v1"
)

// Lists are what a Runtime lists.
type Lists struct {
	// Sandboxes are the pod sandboxes ListPodSandbox answers.
	Sandboxes []*runtimeapi.PodSandbox
	// Containers are the containers ListContainers answers.
	Containers []*runtimeapi.Container
	// Images are the images ListImages answers.
	Images []*runtimeapi.Image
}

// Runtime is a fake CRI runtime. Its methods may be called from any
// goroutine, while it is served. The zero Runtime lists nothing.
type Runtime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	mu    sync.Mutex
	lists Lists
	// delay holds every call this long, or until the caller gives up.
	delay time.Duration
	// sandboxImage is the image of pod sandboxes that Status reports.
	sandboxImage string
	// imagesErr, if not nil, is what ListImages answers.
	imagesErr error

	listContainers atomic.Int64
	listImages     atomic.Int64
	// inFlight is the number of calls being served now.
	inFlight atomic.Int64
}

// New returns a Runtime with no pods, containers or images.
func New() *Runtime { return &Runtime{} }

// AddPod adds a ready pod sandbox: id is the sandbox (pause container) id,
// uid the pod's uid with dashes.
func (r *Runtime) AddPod(id, uid, name, namespace string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists.Sandboxes = append(r.lists.Sandboxes, &runtimeapi.PodSandbox{
		Id:       id,
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Uid: uid, Namespace: namespace},
		State:    runtimeapi.PodSandboxState_SANDBOX_READY,
	})
}

// AddContainer adds a running container as containerd lists one that
// kubelet created in the sandbox sandboxID of the pod uid: kubelet's
// labels, the image id in ImageSpec.Image and ImageRef (made of the
// container id), and the pod spec's image in UserSpecifiedImage.
func (r *Runtime) AddContainer(id, sandboxID, uid, name, pod, namespace, image string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists.Containers = append(r.lists.Containers, &runtimeapi.Container{
		Id:           id,
		PodSandboxId: sandboxID,
		Metadata:     &runtimeapi.ContainerMetadata{Name: name},
		Image:        &runtimeapi.ImageSpec{Image: "sha256:" + id, UserSpecifiedImage: image},
		ImageRef:     "sha256:" + id,
		State:        runtimeapi.ContainerState_CONTAINER_RUNNING,
		Labels: map[string]string{
			LabelContainerName: name,
			LabelPodName:       pod,
			LabelPodNamespace:  namespace,
			LabelPodUID:        uid,
		},
	})
}

// Edit calls f with the lists, locked, for changes AddPod and AddContainer
// do not make. A reply already sent may still be marshalling the messages
// of the lists it was given: while the runtime is served, replace a message
// rather than change it in place.
func (r *Runtime) Edit(f func(*Lists)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.lists)
}

// Lists returns the lists as they are now (new slices of the same
// messages).
func (r *Runtime) Lists() Lists {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshot()
}

// snapshot copies the slices of the lists; r.mu must be held.
func (r *Runtime) snapshot() Lists {
	return Lists{
		Sandboxes:  slices.Clone(r.lists.Sandboxes),
		Containers: slices.Clone(r.lists.Containers),
		Images:     slices.Clone(r.lists.Images),
	}
}

// SetDelay makes every call from now on take d, or fail when its caller
// gives up first; 0 answers at once.
func (r *Runtime) SetDelay(d time.Duration) {
	r.mu.Lock()
	r.delay = d
	r.mu.Unlock()
}

// ListContainersCalls returns the number of ListContainers calls so far,
// answered or not.
func (r *Runtime) ListContainersCalls() int64 { return r.listContainers.Load() }

// ListImagesCalls returns the number of ListImages calls so far, answered
// or not.
func (r *Runtime) ListImagesCalls() int64 { return r.listImages.Load() }

// InFlight returns the number of calls being served now.
func (r *Runtime) InFlight() int64 { return r.inFlight.Load() }

// wait holds a call for the delay, or until ctx ends.
func (r *Runtime) wait(ctx context.Context) error {
	r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	r.mu.Lock()
	d := r.delay
	r.mu.Unlock()
	if d == 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SetSandboxImage sets the image of pod sandboxes (pause containers) that
// Status reports, as containerd 1.6 and 1.7 report their sandbox_image.
func (r *Runtime) SetSandboxImage(image string) {
	r.mu.Lock()
	r.sandboxImage = image
	r.mu.Unlock()
}

// Status implements the CRI's RuntimeService: ready, and, when verbose,
// the "config" info containerd's CRI plugin gives, JSON with its
// sandboxImage.
func (r *Runtime) Status(ctx context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	if err := r.wait(ctx); err != nil {
		return nil, err
	}
	r.mu.Lock()
	img := r.sandboxImage
	r.mu.Unlock()
	resp := &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: true},
	}}}
	if req.GetVerbose() {
		cfg, err := json.Marshal(map[string]any{"sandboxImage": img, "enableSelinux": false})
		if err != nil {
			return nil, err
		}
		resp.Info = map[string]string{"config": string(cfg), "golang": `"go1.20"`}
	}
	return resp, nil
}

// Version implements the CRI's RuntimeService: RuntimeName,
// RuntimeVersion and RuntimeAPIVersion.
func (r *Runtime) Version(ctx context.Context, _ *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	if err := r.wait(ctx); err != nil {
		return nil, err
	}
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: RuntimeName, RuntimeVersion: RuntimeVersion, RuntimeApiVersion: RuntimeAPIVersion}, nil
}

// ListPodSandbox implements the CRI's RuntimeService: every sandbox, with
// no regard to the request's filter.
func (r *Runtime) ListPodSandbox(ctx context.Context, _ *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	if err := r.wait(ctx); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return &runtimeapi.ListPodSandboxResponse{Items: r.snapshot().Sandboxes}, nil
}

// ListContainers implements the CRI's RuntimeService: every container,
// with no regard to the request's filter.
func (r *Runtime) ListContainers(ctx context.Context, _ *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	r.listContainers.Add(1)
	if err := r.wait(ctx); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return &runtimeapi.ListContainersResponse{Containers: r.snapshot().Containers}, nil
}

// ListImages implements the CRI's ImageService: every image, with no
// regard to the request's filter.
func (r *Runtime) ListImages(ctx context.Context, _ *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	r.listImages.Add(1)
	if err := r.wait(ctx); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.imagesErr != nil {
		return nil, r.imagesErr
	}
	return &runtimeapi.ListImagesResponse{Images: r.snapshot().Images}, nil
}

// FailListImages makes ListImages answer err from now on (nil: answer
// again), as a runtime that goes down between two calls does.
func (r *Runtime) FailListImages(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.imagesErr = err
}

// Server is a Runtime served on a unix socket.
type Server struct {
	// Path is the socket's path.
	Path string
	srv  *grpc.Server
	done chan struct{}
}

// SocketDir returns a new temporary directory, removed when the test ends,
// whose path is short enough for a unix socket (108 bytes), which
// t.TempDir's may not be.
func SocketDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Serve serves r on the unix socket path, replacing a file there, until
// Stop or the end of the test.
func Serve(t testing.TB, r *Runtime, path string) *Server {
	t.Helper()
	os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Path: path, srv: grpc.NewServer(), done: make(chan struct{})}
	runtimeapi.RegisterRuntimeServiceServer(s.srv, r)
	runtimeapi.RegisterImageServiceServer(s.srv, r)
	go func() {
		s.srv.Serve(l)
		close(s.done)
	}()
	t.Cleanup(s.Stop)
	return s
}

// Start serves r on a new socket in a SocketDir.
func Start(t testing.TB, r *Runtime) *Server {
	t.Helper()
	return Serve(t, r, filepath.Join(SocketDir(t), "cri.sock"))
}

// Stop stops the server at once, failing calls in flight, and waits until
// it has stopped. Calling it again does nothing.
func (s *Server) Stop() {
	s.srv.Stop()
	<-s.done
}

// Endpoint returns the socket as a CRI endpoint: "unix://" and the path.
func (s *Server) Endpoint() string { return "unix://" + s.Path }
