package cri

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/schedstatd/schedstatd/internal/testkit/fakecri"
)

func TestSocketPath(t *testing.T) {
	tests := []struct {
		endpoint, want string
		err            bool
	}{
		{"unix:///run/containerd/containerd.sock", "/run/containerd/containerd.sock", false},
		{"/run/crio/crio.sock", "/run/crio/crio.sock", false},
		{"tcp://127.0.0.1:1234", "", true},
		{"npipe:////./pipe/containerd-containerd", "", true},
		{"unix://run/relative.sock", "", true},
		{"relative.sock", "", true},
	}
	for _, tt := range tests {
		got, err := SocketPath(tt.endpoint)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("SocketPath(%q) = %q, %v; want %q, error %v", tt.endpoint, got, err, tt.want, tt.err)
		}
		if err != nil && !errors.Is(err, ErrEndpoint) {
			t.Errorf("SocketPath(%q): %v is not ErrEndpoint", tt.endpoint, err)
		}
	}
	if _, err := New(Config{Endpoint: "tcp://127.0.0.1:1234"}); !errors.Is(err, ErrEndpoint) {
		t.Errorf("New with a tcp endpoint: %v, want ErrEndpoint", err)
	}
}

func TestDisabled(t *testing.T) {
	for e, want := range map[string]bool{"": true, "none": true, "unix:///run/crio/crio.sock": false} {
		if got := Disabled(e); got != want {
			t.Errorf("Disabled(%q) = %v, want %v", e, got, want)
		}
	}
}

// TestFirstExisting checks the default's choice: the first endpoint whose
// path is a socket, skipping missing paths and plain files.
func TestFirstExisting(t *testing.T) {
	dir := fakecri.SocketDir(t)
	plain := filepath.Join(dir, "plain.sock")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "crio.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	missing := "unix://" + filepath.Join(dir, "containerd.sock")
	if got := FirstExisting([]string{missing, "unix://" + plain, "unix://" + sock}); got != "unix://"+sock {
		t.Errorf("FirstExisting = %q, want unix://%s", got, sock)
	}
	if got := FirstExisting([]string{missing, "tcp://x"}); got != "" {
		t.Errorf("FirstExisting with no socket = %q, want \"\"", got)
	}
}

func TestResolve(t *testing.T) {
	if got := Resolve("none"); got != "none" {
		t.Errorf("Resolve(none) = %q", got)
	}
	if got := Resolve("unix:///x.sock"); got != "unix:///x.sock" {
		t.Errorf("Resolve(unix:///x.sock) = %q", got)
	}
	if got, want := Resolve(Auto), DefaultEndpoint(); got != want {
		t.Errorf("Resolve(auto) = %q, want %q", got, want)
	}
}
