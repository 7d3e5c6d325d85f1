package cgroupfs

import (
	"encoding/binary"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// dirent is one entry as a test reads it back from getdents64 records.
type dirent struct {
	Name string
	Type uint8
}

// readDirents returns every entry in a getdents64 batch.
func readDirents(b []byte) []dirent {
	var out []dirent
	for {
		name, typ, rest, ok := nextDirent(b)
		if !ok {
			return out
		}
		out = append(out, dirent{string(name), typ})
		b = rest
	}
}

func TestNextDirent(t *testing.T) {
	var batch []byte
	batch = appendDirent(batch, 1, dtDir, ".")
	batch = appendDirent(batch, 2, dtDir, "..")
	batch = appendDirent(batch, 3, 8, "tasks")
	batch = appendDirent(batch, 4, dtDir, "kubepods-burstable-pod6c2a7f1e_3b4d_4e5f_8a9b_0c1d2e3f4a5b.slice")
	batch = appendDirent(batch, 5, dtUnknown, "x")
	want := []dirent{
		{".", dtDir}, {"..", dtDir}, {"tasks", 8},
		{"kubepods-burstable-pod6c2a7f1e_3b4d_4e5f_8a9b_0c1d2e3f4a5b.slice", dtDir},
		{"x", dtUnknown},
	}
	tests := []struct {
		name string
		in   []byte
		want []dirent
	}{
		{name: "batch", in: batch, want: want},
		{name: "empty", in: nil, want: nil},
		{name: "cut header", in: batch[:10], want: nil},
		{name: "cut record", in: batch[:len(batch)-1], want: want[:4]},
		{name: "reclen too small", in: withReclen(batch, 3), want: nil},
		{name: "reclen past end", in: withReclen(batch, 0xffff), want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, readDirents(tt.in)); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
		})
	}
}

// withReclen returns a copy of b with the first record's d_reclen set.
func withReclen(b []byte, reclen uint16) []byte {
	c := append([]byte(nil), b...)
	binary.NativeEndian.PutUint16(c[16:18], reclen)
	return c
}

func TestIsDotOrDotDot(t *testing.T) {
	for name, want := range map[string]bool{".": true, "..": true, "...": false, ".a": false, "a": false, "": false} {
		if got := isDotOrDotDot([]byte(name)); got != want {
			t.Errorf("isDotOrDotDot(%q) = %v, want %v", name, got, want)
		}
	}
}

func FuzzNextDirent(f *testing.F) {
	var batch []byte
	for _, name := range []string{".", "..", "tasks", "kubepods.slice", "cgroup.threads"} {
		batch = appendDirent(batch, 7, dtDir, name)
	}
	f.Add(batch)
	f.Add(batch[:30])
	f.Fuzz(func(t *testing.T, b []byte) {
		for len(b) > 0 {
			name, _, rest, ok := nextDirent(b)
			if !ok {
				return
			}
			if len(rest) >= len(b) || len(name) > len(b)-direntHeader {
				t.Fatalf("record of %d bytes gave name of %d and rest of %d", len(b), len(name), len(rest))
			}
			b = rest
		}
	})
}
