package imagebuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Package is the daemon's main package, the one binary of the image.
const Package = "./cmd/schedstatd"

// BuildBinary builds the daemon of the module in dir as the image holds
// it: static (CGO_ENABLED=0), for linux/arch, without the builder's paths
// (-trimpath), with ldflags (the Makefile's LDFLAGS, which fill
// --version), into out.
func BuildBinary(ctx context.Context, dir, arch, ldflags, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, Package)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", Package, err, strings.TrimSpace(string(b)))
	}
	return nil
}
