package cri

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// DefaultEndpoints are the sockets containerd and CRI-O serve the CRI on,
// in the order DefaultEndpoint tries them.
var DefaultEndpoints = []string{
	"unix:///run/containerd/containerd.sock",
	"unix:///run/crio/crio.sock",
}

// ErrEndpoint reports an endpoint this package cannot dial.
var ErrEndpoint = errors.New("cri: unsupported endpoint")

// Disabled reports whether endpoint turns the runtime lookup off: "" or
// "none".
func Disabled(endpoint string) bool {
	return endpoint == "" || endpoint == "none"
}

// DefaultEndpoint returns the first of DefaultEndpoints whose socket
// exists, or "" when none does.
func DefaultEndpoint() string { return FirstExisting(DefaultEndpoints) }

// FirstExisting returns the first of endpoints whose socket path exists, or
// "".
func FirstExisting(endpoints []string) string {
	for _, e := range endpoints {
		path, err := SocketPath(e)
		if err != nil {
			continue
		}
		if st, err := os.Stat(path); err == nil && st.Mode()&os.ModeSocket != 0 {
			return e
		}
	}
	return ""
}

// SocketPath returns the socket path of endpoint, given as
// "unix:///path/to.sock" (as kubelet's --container-runtime-endpoint takes
// it) or as an absolute path. Other schemes fail with ErrEndpoint: the CRI
// on Linux is served on a unix socket.
func SocketPath(endpoint string) (string, error) {
	path := endpoint
	if rest, ok := strings.CutPrefix(endpoint, "unix://"); ok {
		path = rest
	} else if strings.Contains(endpoint, "://") {
		return "", fmt.Errorf("%w: %q: only unix:// sockets are supported", ErrEndpoint, endpoint)
	}
	if !strings.HasPrefix(path, "/") {
		return "", fmt.Errorf("%w: %q: the socket path must be absolute", ErrEndpoint, endpoint)
	}
	return path, nil
}

// Auto is the endpoint value that stands for DefaultEndpoint.
const Auto = "auto"

// Resolve returns the endpoint a flag value names: Auto becomes
// DefaultEndpoint() ("" when no usual socket exists), other values stay.
func Resolve(endpoint string) string {
	if endpoint == Auto {
		return DefaultEndpoint()
	}
	return endpoint
}
