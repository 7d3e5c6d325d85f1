package schedstat_test

import (
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedstatd/schedstatd/schedstat"
)

// startTimeCases covers every *.stat fixture. wantErr is ErrParse for a
// malformed file, or os.ErrNotExist for the one entry whose file is missing
// on purpose.
var startTimeCases = []struct {
	file    string
	want    uint64
	wantErr error
}{
	{file: "sleep.stat", want: 38975},
	{file: "kworker.stat", want: 26},
	{file: "comm-parens.stat", want: 12345},
	{file: "comm-fake-fields.stat", want: 12345},
	{file: "comm-spaces.stat", want: 12345},
	{file: "comm-newline.stat", want: 12345},
	{file: "starttime-last.stat", want: 4711},
	{file: "truncated.stat", wantErr: schedstat.ErrParse},
	{file: "ends-at-paren.stat", wantErr: schedstat.ErrParse},
	{file: "no-paren.stat", wantErr: schedstat.ErrParse},
	{file: "starttime-garbage.stat", wantErr: schedstat.ErrParse},
	{file: "starttime-negative.stat", wantErr: schedstat.ErrParse},
	{file: "starttime-overflow.stat", wantErr: schedstat.ErrParse},
	{file: "double-space.stat", wantErr: schedstat.ErrParse},
	{file: "empty.stat", wantErr: schedstat.ErrParse},
	{file: "missing.stat", wantErr: os.ErrNotExist},
}

func TestParseStartTimeFixtures(t *testing.T) {
	for _, tc := range startTimeCases {
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
			got, err := schedstat.ParseStartTime(b)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("ParseStartTime(%q) = %d, %v; want an error wrapping %v", b, got, err, tc.wantErr)
				}
				checkQuoted(t, err.Error(), b)
				return
			}
			if err != nil {
				t.Fatalf("ParseStartTime(%q): %v", b, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseStartTime(%q) mismatch (-want +got):\n%s", b, diff)
			}
		})
	}
}

func TestParseStartTimeFixturesCovered(t *testing.T) {
	var names []string
	for _, tc := range startTimeCases {
		names = append(names, tc.file)
	}
	checkCovered(t, "*.stat", names, "missing.stat")
}
