package cri

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Defaults for the zero fields of a Config.
const (
	DefaultCallTimeout = 2 * time.Second
	DefaultInterval    = 30 * time.Second
	DefaultMinGap      = time.Second
	DefaultRetryAfter  = 10 * time.Second
)

// maxMessageBytes bounds a list reply, as kubelet bounds its own: a node
// with many exited containers answers ListContainers with several MiB.
const maxMessageBytes = 16 << 20

// Config configures a Client. Zero durations take the defaults above.
type Config struct {
	// Endpoint is the runtime's CRI socket, "unix:///run/containerd/containerd.sock"
	// or an absolute path.
	Endpoint string
	// CallTimeout bounds each RPC.
	CallTimeout time.Duration
	// Interval is the time between periodic refreshes.
	Interval time.Duration
	// MinGap is how long a refresh that a miss asked for waits before it
	// starts, gathering the other misses of a scrape; such refreshes run
	// at most once per MinGap.
	MinGap time.Duration
	// RetryAfter is how long an id that a refresh did not find, or that a
	// failed refresh was asked for, is not asked for again.
	RetryAfter time.Duration
	// Logger receives one line per change of the runtime's state.
	Logger *slog.Logger
}

// Client is a cache of the runtime's containers and pods, refreshed by its
// own goroutine. It implements collector.Labeler and prometheus.Collector.
// Its methods may be called from any goroutine.
type Client struct {
	cfg    Config
	conn   *grpc.ClientConn
	rt     runtimeapi.RuntimeServiceClient
	images runtimeapi.ImageServiceClient

	cache atomic.Pointer[cache]
	up    atomic.Bool
	// refreshes and failures count refreshes done and failed.
	refreshes, failures atomic.Uint64

	mu sync.Mutex
	// pending holds the keys Labels missed since the last refresh began;
	// asking, those the running refresh looks for.
	pending, asking map[key]struct{}
	// absent holds keys a refresh was asked for and did not find (or
	// could not look for) since absentAt; see rotateAbsent.
	absent   map[key]struct{}
	absentAt time.Time
	kick     chan struct{}

	// state is the runtime's state as last logged, sandbox the image of
	// its pod sandboxes, and tags the image names the last ListImages
	// that answered gave (image ids are content digests, so a name once
	// found stays right); only the refresher goroutine uses them.
	state   runtimeState
	sandbox string
	tags    map[string]string

	// noticeMu guards seen, the cgroup paths Notice needs not parse again.
	noticeMu sync.Mutex
	seen     map[string]struct{}

	cancel context.CancelFunc
	done   chan struct{}
}

type runtimeState int

const (
	stateUnknown runtimeState = iota
	stateUp
	stateDown
)

// New returns a Client of the runtime at cfg.Endpoint and starts its
// refresher, whose first refresh begins at once. It does not wait for the
// runtime: a socket that is missing or a runtime that is down only keeps
// the cache empty and schedstatd_runtime_up at 0. It fails only on an
// endpoint it cannot dial at all. Close stops it.
func New(cfg Config) (*Client, error) {
	path, err := SocketPath(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	cfg.CallTimeout = orDefault(cfg.CallTimeout, DefaultCallTimeout)
	cfg.Interval = orDefault(cfg.Interval, DefaultInterval)
	cfg.MinGap = orDefault(cfg.MinGap, DefaultMinGap)
	cfg.RetryAfter = orDefault(cfg.RetryAfter, DefaultRetryAfter)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	conn, err := grpc.NewClient("unix://"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageBytes)),
		// A local runtime restarts in seconds; do not back off for the
		// two minutes grpc allows by default.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second},
			MinConnectTimeout: cfg.CallTimeout,
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("cri: %s: %w", cfg.Endpoint, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		cfg:     cfg,
		conn:    conn,
		rt:      runtimeapi.NewRuntimeServiceClient(conn),
		images:  runtimeapi.NewImageServiceClient(conn),
		pending: make(map[key]struct{}),
		absent:  make(map[key]struct{}),
		kick:    make(chan struct{}, 1),
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	c.cache.Store(emptyCache)
	go c.run(ctx)
	return c, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Close stops the refresher, cancelling an RPC in flight, and closes the
// connection. Labels keeps answering from the last cache.
func (c *Client) Close() error {
	c.cancel()
	<-c.done
	return c.conn.Close()
}

// Up reports whether the last refresh succeeded.
func (c *Client) Up() bool { return c.up.Load() }

// run refreshes at once, then every Interval and MinGap after Labels
// misses, until ctx ends.
func (c *Client) run(ctx context.Context) {
	defer close(c.done)
	ticker := time.NewTicker(c.cfg.Interval)
	defer ticker.Stop()
	c.refresh(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-c.kick:
			// Wait MinGap: the other misses of the same scrape join this
			// refresh rather than ask for the next one. A periodic
			// refresh due meanwhile serves them at once.
			t := time.NewTimer(c.cfg.MinGap)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
				c.mu.Lock()
				asked := len(c.pending)
				c.mu.Unlock()
				if asked == 0 {
					continue // a late kick for misses the last refresh took
				}
			case <-ticker.C:
				t.Stop()
			}
		}
		c.refresh(ctx)
	}
}

// refresh lists the runtime's pods and containers and publishes the new
// cache. On failure the cache stays as it was.
func (c *Client) refresh(ctx context.Context) {
	c.mu.Lock()
	asked := c.pending
	c.asking, c.pending = asked, make(map[key]struct{})
	c.mu.Unlock()

	next, version, err := c.list(ctx)
	if ctx.Err() != nil {
		return // closing; the cancelled call says nothing of the runtime
	}
	c.refreshes.Add(1)
	if err != nil {
		c.failures.Add(1)
	} else {
		c.cache.Store(next)
	}
	cur := c.cache.Load()
	c.mu.Lock()
	c.rotateAbsent(time.Now())
	for k := range asked {
		if err != nil || !cur.has(k) {
			c.absent[k] = struct{}{}
		}
	}
	c.asking = nil
	c.mu.Unlock()
	c.setState(err, version)
}

// setState records whether the runtime answered, and logs a change.
func (c *Client) setState(err error, version *runtimeapi.VersionResponse) {
	log := c.cfg.Logger
	if err != nil {
		c.up.Store(false)
		if c.state != stateDown {
			log.Warn("container runtime unavailable: container, pod, namespace and image labels keep their last known values and new containers get none until it answers",
				"endpoint", c.cfg.Endpoint, "err", err)
		} else {
			log.Debug("container runtime still unavailable", "endpoint", c.cfg.Endpoint, "err", err)
		}
		c.state = stateDown
		return
	}
	c.up.Store(true)
	if c.state != stateUp {
		cur := c.cache.Load()
		log.Info("container runtime answers", "endpoint", c.cfg.Endpoint,
			"runtime", version.GetRuntimeName(), "runtime_version", version.GetRuntimeVersion(), "cri_version", version.GetRuntimeApiVersion(),
			"containers", len(cur.containers), "pods", len(cur.pods))
	}
	c.state = stateUp
}

// list asks the runtime for its version and sandbox image (when it was
// not up), pods,
// containers and, if a container names its image by id only, images. Each
// call has its own deadline.
func (c *Client) list(ctx context.Context) (*cache, *runtimeapi.VersionResponse, error) {
	var version *runtimeapi.VersionResponse
	if c.state != stateUp {
		v, err := call(ctx, c.cfg.CallTimeout, func(ctx context.Context) (*runtimeapi.VersionResponse, error) {
			return c.rt.Version(ctx, &runtimeapi.VersionRequest{})
		})
		if err != nil {
			return nil, nil, fmt.Errorf("RuntimeService/Version: %w", err)
		}
		version = v
		c.sandbox = c.sandboxImage(ctx)
	}
	pods, err := call(ctx, c.cfg.CallTimeout, func(ctx context.Context) (*runtimeapi.ListPodSandboxResponse, error) {
		return c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("RuntimeService/ListPodSandbox: %w", err)
	}
	ctrs, err := call(ctx, c.cfg.CallTimeout, func(ctx context.Context) (*runtimeapi.ListContainersResponse, error) {
		return c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("RuntimeService/ListContainers: %w", err)
	}
	for _, ctr := range ctrs.GetContainers() {
		if needsImageList(ctr) {
			// A ListImages that fails (the runtime going down between the
			// calls, say) keeps the names the last one gave; an image it
			// never named is labelled with its id. Neither is a reason to
			// call the runtime down.
			if imgs, err := call(ctx, c.cfg.CallTimeout, func(ctx context.Context) (*runtimeapi.ListImagesResponse, error) {
				return c.images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
			}); err == nil {
				c.tags = imageTags(imgs.GetImages())
			} else {
				c.cfg.Logger.Debug("ListImages failed; image labels keep the names last listed, or show image ids", "err", err)
			}
			break
		}
	}
	return build(pods.GetItems(), ctrs.GetContainers(), c.tags, c.sandbox), version, nil
}

// call runs f with a deadline of timeout.
func call[T any](ctx context.Context, timeout time.Duration, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return f(ctx)
}
