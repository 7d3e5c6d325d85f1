package schedstat_test

import (
	"testing"

	"github.com/schedstatd/schedstatd/schedstat"
)

// The per-task, per-pass path must not allocate: these pin it.

func TestParseAllocs(t *testing.T) {
	b, err := loadFixture("max-uint64.schedstat")
	if err != nil {
		t.Fatal(err)
	}
	var s schedstat.Stat
	allocs := testing.AllocsPerRun(1000, func() {
		s, err = schedstat.Parse(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Timeslices == 0 {
		t.Fatalf("Parse(%q) = %+v", b, s)
	}
	if allocs != 0 {
		t.Errorf("Parse allocates %v times per call, want 0", allocs)
	}
}

func TestParseStartTimeAllocs(t *testing.T) {
	b, err := loadFixture("sleep.stat")
	if err != nil {
		t.Fatal(err)
	}
	var start uint64
	allocs := testing.AllocsPerRun(1000, func() {
		start, err = schedstat.ParseStartTime(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	if start != 38975 {
		t.Fatalf("ParseStartTime(%q) = %d, want 38975", b, start)
	}
	if allocs != 0 {
		t.Errorf("ParseStartTime allocates %v times per call, want 0", allocs)
	}
}
