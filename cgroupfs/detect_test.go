package cgroupfs

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// fakeFS is a filesystem layout for detect: the f_type of each mount and
// directory that exists, the files that exist, and the v1 mounts that
// mountinfo lists by subsystem.
type fakeFS struct {
	types  map[string]int64
	files  map[string]bool
	mounts map[string]string
}

func (f fakeFS) probe() probe {
	return probe{
		fsType: func(path string) (int64, error) {
			if t, ok := f.types[path]; ok {
				return t, nil
			}
			return 0, unix.ENOENT
		},
		exists: func(path string) bool { return f.files[path] },
		mountpoint: func(root, sub string) (string, error) {
			if m, ok := f.mounts[sub]; ok && strings.HasPrefix(m, root) {
				return m, nil
			}
			return "", ErrNoHierarchy
		},
	}
}

// Layouts of real nodes, under the root /r.
var (
	pureV2 = fakeFS{types: map[string]int64{"/r": magicCgroup2}}
	hybrid = fakeFS{
		types: map[string]int64{"/r": magicTmpfs, "/r/cpu": magicCgroup, "/r/cpuacct": magicCgroup,
			"/r/systemd": magicCgroup, "/r/memory": magicCgroup, "/r/unified": magicCgroup2},
		files:  map[string]bool{"/r/cpuacct/cpuacct.usage": true},
		mounts: map[string]string{"cpu": "/r/cpu", "cpuacct": "/r/cpuacct", "name=systemd": "/r/systemd"},
	}
	// combined is a v1 node whose systemd mounted cpu and cpuacct together,
	// without the cpu and cpuacct symlinks.
	combined = fakeFS{
		types:  map[string]int64{"/r": magicTmpfs, "/r/cpu,cpuacct": magicCgroup, "/r/systemd": magicCgroup},
		files:  map[string]bool{"/r/cpu,cpuacct/cpuacct.usage": true},
		mounts: map[string]string{"cpu": "/r/cpu,cpuacct", "cpuacct": "/r/cpu,cpuacct", "name=systemd": "/r/systemd"},
	}
	systemdOnly = fakeFS{
		types:  map[string]int64{"/r": magicTmpfs, "/r/systemd": magicCgroup},
		mounts: map[string]string{"name=systemd": "/r/systemd"},
	}
	unifiedOnly = fakeFS{types: map[string]int64{"/r": magicTmpfs, "/r/unified": magicCgroup2}}
	v1Root      = fakeFS{types: map[string]int64{"/r": magicCgroup}, files: map[string]bool{"/r/cpuacct.usage": true}}
	plainDir    = fakeFS{types: map[string]int64{"/r": 0xef53}}
)

func TestDetect(t *testing.T) {
	acct := usageSource{file: usageFileV1}
	tests := []struct {
		name    string
		fs      fakeFS
		hier    string
		want    layout
		wantErr error
	}{
		{"pure v2", pureV2, "", layout{V2, Unified, "/r", "/r", cpuStatUsage, true}, nil},
		{"pure v2 unified", pureV2, Unified, layout{V2, Unified, "/r", "/r", cpuStatUsage, true}, nil},
		{"pure v2 has no cpuacct", pureV2, "cpuacct", layout{}, ErrNoHierarchy},
		{"hybrid", hybrid, "", layout{V1, "cpuacct", "/r/cpuacct", "/r/unified", acct, true}, nil},
		{"hybrid unified", hybrid, Unified, layout{V2, Unified, "/r/unified", "/r/unified", cpuStatUsage, true}, nil},
		{"hybrid cpu", hybrid, "cpu", layout{V1, "cpu", "/r/cpu", "/r/unified", usageSource{file: usageFileV1, mirror: "/r/cpuacct"}, true}, nil},
		{"hybrid systemd", hybrid, "systemd", layout{V1, "systemd", "/r/systemd", "/r/unified", usageSource{file: usageFileV1, mirror: "/r/cpuacct"}, true}, nil},
		{"hybrid name=systemd", hybrid, "name=systemd", layout{V1, "name=systemd", "/r/systemd", "/r/unified", usageSource{file: usageFileV1, mirror: "/r/cpuacct"}, true}, nil},
		{"hybrid memory", hybrid, "memory", layout{V1, "memory", "/r/memory", "/r/unified", usageSource{file: usageFileV1, mirror: "/r/cpuacct"}, true}, nil},
		{"hybrid missing", hybrid, "blkio", layout{}, ErrNoHierarchy},
		{"combined", combined, "", layout{V1, "cpuacct", "/r/cpu,cpuacct", "", acct, true}, nil},
		{"combined cpu", combined, "cpu", layout{V1, "cpu", "/r/cpu,cpuacct", "", acct, true}, nil},
		{"systemd only", systemdOnly, "", layout{V1, "systemd", "/r/systemd", "", usageSource{}, true}, nil},
		{"systemd only unified", systemdOnly, Unified, layout{}, ErrNoHierarchy},
		{"unified only", unifiedOnly, "", layout{V2, Unified, "/r/unified", "/r/unified", cpuStatUsage, true}, nil},
		{"v1 mount as root", v1Root, "", layout{V1, "r", "/r", "", acct, true}, nil},
		{"plain directory", plainDir, "", layout{}, ErrNotCgroup},
		{"plain directory cpuacct", plainDir, "cpuacct", layout{}, ErrNoHierarchy},
		{"missing root", fakeFS{}, "", layout{}, fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := detect("/r", tt.hier, tt.fs.probe())
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("detect error = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "/r") {
				t.Errorf("error %q does not name the root", err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(layout{}, usageSource{})); diff != "" {
				t.Errorf("detect(%q) (-want +got):\n%s", tt.hier, diff)
			}
		})
	}
}
