package cri

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime is the runtime side of the CRI, served by a real gRPC server
// on a unix socket in the test process. Tests edit its lists between
// calls.
type fakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	mu         sync.Mutex
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
	images     []*runtimeapi.Image
	// delay holds every call this long, or until the caller gives up.
	delay time.Duration

	listContainers atomic.Int64
	listImages     atomic.Int64
	// inFlight is the number of calls being served now.
	inFlight atomic.Int64
}

func (f *fakeRuntime) wait(ctx context.Context) error {
	f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	f.mu.Lock()
	d := f.delay
	f.mu.Unlock()
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

func (f *fakeRuntime) Version(ctx context.Context, _ *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "fake", RuntimeVersion: "1.0", RuntimeApiVersion: "v1"}, nil
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &runtimeapi.ListPodSandboxResponse{Items: f.sandboxes}, nil
}

func (f *fakeRuntime) ListContainers(ctx context.Context, _ *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f.listContainers.Add(1)
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &runtimeapi.ListContainersResponse{Containers: f.containers}, nil
}

func (f *fakeRuntime) ListImages(ctx context.Context, _ *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	f.listImages.Add(1)
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &runtimeapi.ListImagesResponse{Images: f.images}, nil
}

func (f *fakeRuntime) addPod(id, uid, name, namespace string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sandboxes = append(f.sandboxes, &runtimeapi.PodSandbox{
		Id:       id,
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Uid: uid, Namespace: namespace},
		State:    runtimeapi.PodSandboxState_SANDBOX_READY,
	})
}

// addContainer adds a container as containerd lists one that kubelet
// created: kubelet's labels, the image id in ImageSpec.Image and the pod
// spec's image in UserSpecifiedImage.
func (f *fakeRuntime) addContainer(id, sandboxID, uid, name, pod, namespace, image string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.containers = append(f.containers, &runtimeapi.Container{
		Id:           id,
		PodSandboxId: sandboxID,
		Metadata:     &runtimeapi.ContainerMetadata{Name: name},
		Image:        &runtimeapi.ImageSpec{Image: "sha256:" + id, UserSpecifiedImage: image},
		ImageRef:     "sha256:" + id,
		State:        runtimeapi.ContainerState_CONTAINER_RUNNING,
		Labels: map[string]string{
			labelContainerName: name,
			labelPodName:       pod,
			labelPodNamespace:  namespace,
			labelPodUID:        uid,
		},
	})
}

func (f *fakeRuntime) setDelay(d time.Duration) {
	f.mu.Lock()
	f.delay = d
	f.mu.Unlock()
}

// criServer is a fakeRuntime served on a unix socket.
type criServer struct {
	path string
	srv  *grpc.Server
	done chan struct{}
}

// shortTempDir returns a temporary directory with a path short enough for
// a unix socket (108 bytes), which t.TempDir's may not be.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// serve serves f on path until stop or the end of the test.
func serve(t *testing.T, f *fakeRuntime, path string) *criServer {
	t.Helper()
	os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := &criServer{path: path, srv: grpc.NewServer(), done: make(chan struct{})}
	runtimeapi.RegisterRuntimeServiceServer(s.srv, f)
	runtimeapi.RegisterImageServiceServer(s.srv, f)
	go func() {
		s.srv.Serve(l)
		close(s.done)
	}()
	t.Cleanup(s.stop)
	return s
}

// startServer serves f on a new socket.
func startServer(t *testing.T, f *fakeRuntime) *criServer {
	t.Helper()
	return serve(t, f, filepath.Join(shortTempDir(t), "cri.sock"))
}

// stop stops the server at once, failing calls in flight, and waits.
func (s *criServer) stop() {
	s.srv.Stop()
	<-s.done
}

func (s *criServer) endpoint() string { return "unix://" + s.path }
