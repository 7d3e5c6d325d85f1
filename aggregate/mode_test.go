package aggregate

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/internal/loadmode"
	"github.com/schedstatd/schedstatd/internal/testkit/testcg"
	"golang.org/x/sys/unix"
)

// denied stands in for a kernel that refuses an unprivileged process.
func denied(*ebpf.CollectionSpec, ebpf.CollectionOptions) (*ebpf.Collection, error) {
	return nil, fmt.Errorf("map create: %w", unix.EPERM)
}

// TestSelect: auto falls back with one warning line when the source cannot
// load (refused here, or a kernel without task storage), on fails with
// ErrUnsupported, off loads nothing.
func TestSelect(t *testing.T) {
	h, err := cgroupfs.Open(testcg.Root, "")
	if err != nil {
		t.Fatal(err)
	}
	deny := Options{Hierarchy: h, Load: denied}
	spec, btfErr := btf.LoadKernelSpec()
	host, _ := cgroupfs.InitialPIDNamespace("/proc")
	triesLoad := btfErr == nil && host && hasTaskStorage(spec) == nil
	for _, tc := range []struct {
		name    string
		mode    loadmode.Mode
		wantErr bool
		wantLog string
	}{
		{"auto falls back", loadmode.Auto, false, "level=WARN msg=\"kernel totals unavailable"},
		{"on fails", loadmode.On, true, ""},
		{"off loads nothing", loadmode.Off, false, "kernel totals off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			s, err := Select(tc.mode, deny, slog.New(slog.NewTextHandler(&log, nil)))
			if s != nil {
				s.Close()
				t.Fatal("got a source")
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.mode == loadmode.On && (!errors.Is(err, ErrUnsupported) || triesLoad && !errors.Is(err, os.ErrPermission)) {
				t.Errorf("err = %v, want ErrUnsupported and, where the kernel would load it, a permission error", err)
			}
			if !strings.Contains(log.String(), tc.wantLog) || strings.Count(log.String(), "\n") > 1 {
				t.Errorf("log %q, want one line with %q", log.String(), tc.wantLog)
			}
		})
	}
}

// TestKernelSupports: the running kernel's answer agrees with whether the
// source opens (as root).
func TestKernelSupports(t *testing.T) {
	err := KernelSupports()
	spec, btfErr := btf.LoadKernelSpec()
	if btfErr != nil {
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("no kernel BTF, KernelSupports = %v", err)
		}
		return
	}
	if (err == nil) != (hasTaskStorage(spec) == nil) {
		t.Errorf("KernelSupports = %v, task storage: %v", err, hasTaskStorage(spec))
	}
}
