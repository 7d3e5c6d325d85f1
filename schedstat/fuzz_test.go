package schedstat_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedstatd/schedstatd/schedstat"
)

// addFixtureSeeds seeds f with every flat fixture file, both kinds, so each
// parser also starts from the other's shapes.
func addFixtureSeeds(f *testing.F) {
	for _, pattern := range []string{"*.schedstat", "*.stat"} {
		for _, name := range fixtureNames(f, pattern) {
			b, err := loadFixture(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}

// specParse is the schedstat format written down a second way, from the
// documented contract rather than the implementation: at most one final
// newline, then exactly three non-empty runs of ASCII digits, separated by
// single spaces, each fitting in a uint64.
func specParse(b []byte) (schedstat.Stat, bool) {
	parts := strings.Split(strings.TrimSuffix(string(b), "\n"), " ")
	if len(parts) != 3 {
		return schedstat.Stat{}, false
	}
	var v [3]uint64
	for i, p := range parts {
		if !isDigits(p) {
			return schedstat.Stat{}, false
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return schedstat.Stat{}, false
		}
		v[i] = n
	}
	return schedstat.Stat{RunNanoseconds: v[0], WaitNanoseconds: v[1], Timeslices: v[2]}, true
}

// specStartTime is field 22 of a stat line written down a second way:
// after the last ')' comes one space, then fields 3 to 21, each non-empty
// and ended by one space, then field 22, a run of ASCII digits that fits in
// a uint64 and is followed by a space, a newline or nothing. It also
// returns fields 3 to 21.
func specStartTime(b []byte) (uint64, []string, bool) {
	s := string(b)
	i := strings.LastIndex(s, ")")
	if i < 0 || !strings.HasPrefix(s[i+1:], " ") {
		return 0, nil, false
	}
	fields := strings.SplitN(s[i+2:], " ", 22-3+2)
	if len(fields) < 22-3+1 {
		return 0, nil, false
	}
	before := fields[:22-3]
	for _, f := range before {
		if f == "" {
			return 0, nil, false
		}
	}
	f22, _, _ := strings.Cut(fields[22-3], "\n")
	if !isDigits(f22) {
		return 0, nil, false
	}
	n, err := strconv.ParseUint(f22, 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return n, before, true
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func FuzzParse(f *testing.F) {
	addFixtureSeeds(f)
	fake := newFakeProcfs(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		in := string(b)
		got, err := schedstat.Parse(b)
		if string(b) != in {
			t.Fatalf("Parse modified its input: %q became %q", in, b)
		}
		want, ok := specParse(b)
		if err != nil {
			if !errors.Is(err, schedstat.ErrParse) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrParse", b, err)
			}
			checkQuoted(t, err.Error(), b)
			if ok {
				t.Fatalf("Parse(%q) rejects a well-formed input (%+v): %v", b, want, err)
			}
		} else {
			if !ok {
				t.Fatalf("Parse(%q) = %+v, want an error", b, got)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("Parse(%q) mismatch (-want +got):\n%s", b, diff)
			}
			again, err := schedstat.Parse(fmt.Appendf(nil, "%d %d %d\n", got.RunNanoseconds, got.WaitNanoseconds, got.Timeslices))
			if err != nil {
				t.Fatalf("Parse of re-formatted %+v: %v", got, err)
			}
			if diff := cmp.Diff(got, again); diff != "" {
				t.Fatalf("re-formatting %q and parsing again changed it (-first +second):\n%s", b, diff)
			}
		}
		checkParseAgainstProcfs(t, fake, b)
	})
}

func FuzzParseStartTime(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		in := string(b)
		got, err := schedstat.ParseStartTime(b)
		if string(b) != in {
			t.Fatalf("ParseStartTime modified its input: %q became %q", in, b)
		}
		want, fields, ok := specStartTime(b)
		if err != nil {
			if !errors.Is(err, schedstat.ErrParse) {
				t.Fatalf("ParseStartTime(%q) error %v does not wrap ErrParse", b, err)
			}
			checkQuoted(t, err.Error(), b)
			if ok {
				t.Fatalf("ParseStartTime(%q) rejects a well-formed input (start %d): %v", b, want, err)
			}
			return
		}
		if !ok {
			t.Fatalf("ParseStartTime(%q) = %d, want an error", b, got)
		}
		if got != want {
			t.Fatalf("ParseStartTime(%q) = %d, want %d", b, got, want)
		}
		line := fmt.Appendf(nil, "1 (comm) %s %d\n", strings.Join(fields, " "), got)
		again, err := schedstat.ParseStartTime(line)
		if err != nil {
			t.Fatalf("ParseStartTime of re-formatted %q: %v", line, err)
		}
		if again != got {
			t.Fatalf("re-formatting %q as %q and parsing again gave %d, want %d", b, line, again, got)
		}
	})
}
