package kernels

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSymbolsAnnotate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "System.map")
	m := "ffffffff81000000 T _stext\nffffffff81000100 t do_one\nffffffff81000200 D some_data\nffffffff81000300 T do_two\n"
	if err := os.WriteFile(path, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := readSymbols(path)
	if err != nil {
		t.Fatal(err)
	}
	got := s.annotate("RIP=ffffffff81000234 RFL=00000246\nffffc90000013e48: 0xffffffff81000301 0xffff888000001000\n00000000")
	for _, want := range []string{"<do_one+0x134>", "<do_two+0x1>"} {
		if !strings.Contains(got, want) {
			t.Errorf("annotate: %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "some_data") {
		t.Errorf("annotate named a data symbol: %q", got)
	}
	if n := s.lookup(0xffff888000001000); n != "" {
		t.Errorf("a direct-map address named %q", n)
	}
}
