package schedstat_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fixtureDir holds the plain files the table tests and the fuzz seeds read:
// *.schedstat and *.stat for the parsers (proc/ is a fake procfs for
// procsource.Open).
const fixtureDir = "../test/fixtures/schedstat"

// loadFixture returns the contents of the fixture file name. A missing file
// is an error that wraps os.ErrNotExist and names the path, never empty
// contents, so a renamed fixture cannot turn into a test of the empty input.
func loadFixture(name string) ([]byte, error) {
	path := filepath.Join(fixtureDir, name)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fixture %s: %w", name, err)
	}
	return b, nil
}

// fixtureNames returns the base names of the flat fixture files matching
// pattern, sorted, and fails t if there are none.
func fixtureNames(t testing.TB, pattern string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(fixtureDir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			names = append(names, filepath.Base(p))
		}
	}
	if len(names) == 0 {
		t.Fatalf("no fixtures match %s in %s", pattern, fixtureDir)
	}
	slices.Sort(names)
	return names
}

// checkCovered fails t unless the fixture files matching pattern are
// exactly the files named in table, so a new fixture cannot sit untested
// and a table entry cannot point at a file that is not there.
func checkCovered(t *testing.T, pattern string, table []string, missing string) {
	t.Helper()
	onDisk := fixtureNames(t, pattern)
	var want []string
	for _, name := range table {
		if name != missing {
			want = append(want, name)
		}
	}
	slices.Sort(want)
	if !slices.Equal(want, onDisk) {
		t.Errorf("fixture table and %s/%s differ:\n table: %q\n disk:  %q", fixtureDir, pattern, want, onDisk)
	}
}

// checkQuoted fails t unless msg quotes in, or for a long in at least its
// beginning, and stays short enough for a log line.
func checkQuoted(t testing.TB, msg string, in []byte) {
	t.Helper()
	const maxShown = 64
	if len(in) <= maxShown {
		if q := strconv.Quote(string(in)); !strings.Contains(msg, q) {
			t.Errorf("error %q does not quote the input %s", msg, q)
		}
		return
	}
	q := strconv.Quote(string(in[:maxShown]))
	if prefix := q[:len(q)-1]; !strings.Contains(msg, prefix) {
		t.Errorf("error %q does not quote the beginning of the input %s", msg, prefix)
	}
	if limit := 4*maxShown + 128; len(msg) > limit {
		t.Errorf("error message is %d bytes for a %d-byte input, want at most %d", len(msg), len(in), limit)
	}
}

func TestLoadFixtureMissing(t *testing.T) {
	b, err := loadFixture("does-not-exist.schedstat")
	if err == nil {
		t.Fatalf("loadFixture of a missing file returned %q and no error", b)
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error %q does not wrap os.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), "does-not-exist.schedstat") {
		t.Errorf("error %q does not name the missing file", err)
	}
	if b != nil {
		t.Errorf("loadFixture of a missing file returned contents %q", b)
	}
}

// fixtureCase is one fixture file and what parsing it gives: want, or an
// error wrapping wantErr (ErrParse for a malformed file, os.ErrNotExist
// for one missing on purpose).
type fixtureCase[T any] struct {
	file    string
	want    T
	wantErr error
}

// runFixtureCases parses each case's fixture with parse, named name in
// messages, and checks the result; a parse error must quote its input.
func runFixtureCases[T any](t *testing.T, name string, cases []fixtureCase[T], parse func([]byte) (T, error)) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			b, err := loadFixture(tc.file)
			if tc.wantErr == os.ErrNotExist {
				if !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("loadFixture(%q) = %q, %v; want an error wrapping os.ErrNotExist", tc.file, b, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := parse(b)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("%s(%q) = %+v, %v; want an error wrapping %v", name, b, got, err, tc.wantErr)
				}
				checkQuoted(t, err.Error(), b)
				return
			}
			if err != nil {
				t.Fatalf("%s(%q): %v", name, b, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s(%q) mismatch (-want +got):\n%s", name, b, diff)
			}
		})
	}
}

// caseFiles returns the files of cases.
func caseFiles[T any](cases []fixtureCase[T]) []string {
	names := make([]string, len(cases))
	for i, tc := range cases {
		names[i] = tc.file
	}
	return names
}
