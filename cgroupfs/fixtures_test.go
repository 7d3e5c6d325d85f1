package cgroupfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// fixtureDir holds the plain fixture trees: a pure v2 layout and a v1
// layout, described in its README.md.
const fixtureDir = "../test/fixtures/cgroupfs"

// fixtureFiles returns the contents of every fixture file called name (such
// as "tasks" or "cpu.stat"), for fuzz seeds and parser tables. It fails t
// when there are none, so a renamed fixture cannot leave a fuzz target
// without its seeds.
func fixtureFiles(t testing.TB, name string) [][]byte {
	t.Helper()
	var out [][]byte
	err := filepath.WalkDir(fixtureDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != name {
			return err
		}
		b, err := os.ReadFile(path)
		out = append(out, b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no fixture files called %s under %s", name, fixtureDir)
	}
	return out
}
