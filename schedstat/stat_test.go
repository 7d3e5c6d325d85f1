package schedstat_test

import (
	"math"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedstatd/schedstatd/schedstat"
)

// parseCases covers every *.schedstat fixture. wantErr is ErrParse for a
// malformed file, or os.ErrNotExist for the one entry whose file is missing
// on purpose.
var parseCases = []fixtureCase[schedstat.Stat]{
	{file: "valid.schedstat", want: schedstat.Stat{RunNanoseconds: 123, WaitNanoseconds: 456, Timeslices: 7}},
	{file: "sleep.schedstat", want: schedstat.Stat{RunNanoseconds: 1201748, WaitNanoseconds: 0, Timeslices: 4}},
	{file: "zero.schedstat", want: schedstat.Stat{}},
	{file: "max-uint64.schedstat", want: schedstat.Stat{RunNanoseconds: math.MaxUint64, WaitNanoseconds: math.MaxUint64, Timeslices: math.MaxUint64}},
	{file: "no-newline.schedstat", want: schedstat.Stat{RunNanoseconds: 123, WaitNanoseconds: 456, Timeslices: 7}},
	{file: "overflow.schedstat", wantErr: schedstat.ErrParse},
	{file: "overflow-last.schedstat", wantErr: schedstat.ErrParse},
	{file: "long-overflow.schedstat", wantErr: schedstat.ErrParse},
	{file: "trailing-garbage.schedstat", wantErr: schedstat.ErrParse},
	{file: "trailing-space.schedstat", wantErr: schedstat.ErrParse},
	{file: "two-newlines.schedstat", wantErr: schedstat.ErrParse},
	{file: "crlf.schedstat", wantErr: schedstat.ErrParse},
	{file: "extra-field.schedstat", wantErr: schedstat.ErrParse},
	{file: "two-fields.schedstat", wantErr: schedstat.ErrParse},
	{file: "negative.schedstat", wantErr: schedstat.ErrParse},
	{file: "plus-sign.schedstat", wantErr: schedstat.ErrParse},
	{file: "empty.schedstat", wantErr: schedstat.ErrParse},
	{file: "newline-only.schedstat", wantErr: schedstat.ErrParse},
	{file: "leading-space.schedstat", wantErr: schedstat.ErrParse},
	{file: "double-space.schedstat", wantErr: schedstat.ErrParse},
	{file: "tab.schedstat", wantErr: schedstat.ErrParse},
	{file: "newline-separator.schedstat", wantErr: schedstat.ErrParse},
	{file: "hex.schedstat", wantErr: schedstat.ErrParse},
	{file: "nul.schedstat", wantErr: schedstat.ErrParse},
	{file: "missing.schedstat", wantErr: os.ErrNotExist},
}

func TestParseFixtures(t *testing.T) {
	runFixtureCases(t, "Parse", parseCases, schedstat.Parse)
}

func TestParseFixturesCovered(t *testing.T) {
	checkCovered(t, "*.schedstat", caseFiles(parseCases), "missing.schedstat")
}

func TestStatAdd(t *testing.T) {
	tests := []struct {
		name string
		a, b schedstat.Stat
		want schedstat.Stat
	}{
		{"zero", schedstat.Stat{}, schedstat.Stat{}, schedstat.Stat{}},
		{"field-wise", schedstat.Stat{RunNanoseconds: 1, WaitNanoseconds: 2, Timeslices: 3}, schedstat.Stat{RunNanoseconds: 10, WaitNanoseconds: 20, Timeslices: 30}, schedstat.Stat{RunNanoseconds: 11, WaitNanoseconds: 22, Timeslices: 33}},
		{"identity", schedstat.Stat{RunNanoseconds: 5, WaitNanoseconds: 6, Timeslices: 7}, schedstat.Stat{}, schedstat.Stat{RunNanoseconds: 5, WaitNanoseconds: 6, Timeslices: 7}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.a.Add(tc.b)); diff != "" {
				t.Errorf("%+v.Add(%+v) mismatch (-want +got):\n%s", tc.a, tc.b, diff)
			}
			if diff := cmp.Diff(tc.want, tc.b.Add(tc.a)); diff != "" {
				t.Errorf("%+v.Add(%+v) mismatch (-want +got):\n%s", tc.b, tc.a, diff)
			}
		})
	}
}

func TestStatSince(t *testing.T) {
	tests := []struct {
		name      string
		cur, prev schedstat.Stat
		want      schedstat.Stat
	}{
		{"unchanged", schedstat.Stat{RunNanoseconds: 5, WaitNanoseconds: 6, Timeslices: 7}, schedstat.Stat{RunNanoseconds: 5, WaitNanoseconds: 6, Timeslices: 7}, schedstat.Stat{}},
		{"increase", schedstat.Stat{RunNanoseconds: 15, WaitNanoseconds: 26, Timeslices: 37}, schedstat.Stat{RunNanoseconds: 5, WaitNanoseconds: 6, Timeslices: 7}, schedstat.Stat{RunNanoseconds: 10, WaitNanoseconds: 20, Timeslices: 30}},
		{"from zero", schedstat.Stat{RunNanoseconds: 1, WaitNanoseconds: 2, Timeslices: 3}, schedstat.Stat{}, schedstat.Stat{RunNanoseconds: 1, WaitNanoseconds: 2, Timeslices: 3}},
		// A field that went backwards counts as no increase, never as a
		// wrapped-around huge one; the other fields still count.
		{"one field backwards", schedstat.Stat{RunNanoseconds: 4, WaitNanoseconds: 26, Timeslices: 37}, schedstat.Stat{RunNanoseconds: 5, WaitNanoseconds: 6, Timeslices: 7}, schedstat.Stat{RunNanoseconds: 0, WaitNanoseconds: 20, Timeslices: 30}},
		{"all backwards", schedstat.Stat{}, schedstat.Stat{RunNanoseconds: math.MaxUint64, WaitNanoseconds: 1, Timeslices: 1}, schedstat.Stat{}},
		{"full range", schedstat.Stat{RunNanoseconds: math.MaxUint64, WaitNanoseconds: math.MaxUint64, Timeslices: math.MaxUint64}, schedstat.Stat{}, schedstat.Stat{RunNanoseconds: math.MaxUint64, WaitNanoseconds: math.MaxUint64, Timeslices: math.MaxUint64}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.cur.Since(tc.prev)); diff != "" {
				t.Errorf("%+v.Since(%+v) mismatch (-want +got):\n%s", tc.cur, tc.prev, diff)
			}
		})
	}
}
