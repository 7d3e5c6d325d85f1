package schedstat_test

import (
	"os"
	"testing"

	"github.com/schedstatd/schedstatd/schedstat"
)

// startTimeCases covers every *.stat fixture. wantErr is ErrParse for a
// malformed file, or os.ErrNotExist for the one entry whose file is missing
// on purpose.
var startTimeCases = []fixtureCase[uint64]{
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
	runFixtureCases(t, "ParseStartTime", startTimeCases, schedstat.ParseStartTime)
}

func TestParseStartTimeFixturesCovered(t *testing.T) {
	checkCovered(t, "*.stat", caseFiles(startTimeCases), "missing.stat")
}
