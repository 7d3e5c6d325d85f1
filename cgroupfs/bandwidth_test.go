package cgroupfs

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseBandwidth(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Bandwidth
		wantErr bool
	}{
		{
			name: "v1, Linux 5.14 and later",
			in:   "nr_periods 250\nnr_throttled 200\nthrottled_time 16000000000\nnr_bursts 2\nburst_time 4000000\n",
			want: Bandwidth{Periods: 250, ThrottledPeriods: 200, ThrottledNanoseconds: 16e9, HasThrottling: true, Bursts: 2, BurstNanoseconds: 4e6, HasBursts: true},
		},
		{
			name: "v1 before bursts",
			in:   "nr_periods 7\nnr_throttled 1\nthrottled_time 3",
			want: Bandwidth{Periods: 7, ThrottledPeriods: 1, ThrottledNanoseconds: 3, HasThrottling: true},
		},
		{
			name: "v2 with the cpu controller",
			in:   "usage_usec 2500000\nuser_usec 1500000\nsystem_usec 1000000\nnice_usec 0\nnr_periods 1200\nnr_throttled 340\nthrottled_usec 5100000\nnr_bursts 3\nburst_usec 12000\n",
			want: Bandwidth{Periods: 1200, ThrottledPeriods: 340, ThrottledNanoseconds: 5.1e9, HasThrottling: true, Bursts: 3, BurstNanoseconds: 12e6, HasBursts: true},
		},
		{name: "v2 without the cpu controller", in: "usage_usec 12\nuser_usec 7\nsystem_usec 5\nnice_usec 0\n", want: Bandwidth{}},
		{name: "empty", in: "", want: Bandwidth{}},
		{name: "unchecked keys skipped", in: "usage_usec x\nnr_periods 1\nnr_throttled 0\nthrottled_usec 0\n", want: Bandwidth{Periods: 1, HasThrottling: true}},
		{name: "max in ns", in: "nr_periods 0\nnr_throttled 0\nthrottled_time 18446744073709551615\n", want: Bandwidth{ThrottledNanoseconds: 1<<64 - 1, HasThrottling: true}},
		{name: "us overflowing ns", in: "nr_periods 0\nnr_throttled 0\nthrottled_usec 18446744073709552\n", wantErr: true},
		{name: "no throttled time", in: "nr_periods 1\nnr_throttled 0\n", wantErr: true},
		{name: "burst count alone", in: "nr_bursts 1\n", wantErr: true},
		{name: "garbage value", in: "nr_periods 7\nnr_throttled x\nthrottled_time 0\n", wantErr: true},
		{name: "negative", in: "nr_periods -1\nnr_throttled 0\nthrottled_time 0\n", wantErr: true},
		{name: "two spaces", in: "nr_periods  1\nnr_throttled 0\nthrottled_time 0\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseBandwidth([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseBandwidth(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrParse) {
				t.Errorf("error %v does not wrap ErrParse", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseBandwidth(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseKernelFilesAllocs(t *testing.T) {
	stat := []byte("usage_usec 2500000\nuser_usec 1500000\nsystem_usec 1000000\nnr_periods 1200\nnr_throttled 340\nthrottled_usec 5100000\nnr_bursts 3\nburst_usec 12000\n")
	pressure := []byte("some avg10=12.50 avg60=8.03 avg300=2.10 total=6200000\nfull avg10=10.00 avg60=6.00 avg300=1.50 total=4100000\n")
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ParseBandwidth(stat); err != nil {
			t.Fatal(err)
		}
		if _, err := ParsePressure(pressure); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ParseBandwidth and ParsePressure: %v allocations, want 0", allocs)
	}
}

func FuzzParseBandwidth(f *testing.F) {
	for _, b := range fixtureFiles(f, "cpu.stat") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseBandwidth(b)
		if err != nil {
			if !errors.Is(err, ErrParse) || got != (Bandwidth{}) {
				t.Fatalf("ParseBandwidth(%q) = %+v, %v: want zero and ErrParse", b, got, err)
			}
			return
		}
		// The last line of each key holds its value, as strconv reads it.
		last := map[string]uint64{}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, " ")
			if n, err := strconv.ParseUint(v, 10, 64); err == nil {
				last[k] = n
			}
		}
		ns := func(nsKey, usKey string) uint64 {
			if v, ok := last[nsKey]; ok {
				return v
			}
			return last[usKey] * 1000
		}
		want := Bandwidth{HasThrottling: got.HasThrottling, HasBursts: got.HasBursts}
		if got.HasThrottling {
			want.Periods, want.ThrottledPeriods = last["nr_periods"], last["nr_throttled"]
			want.ThrottledNanoseconds = ns("throttled_time", "throttled_usec")
		}
		if got.HasBursts {
			want.Bursts, want.BurstNanoseconds = last["nr_bursts"], ns("burst_time", "burst_usec")
		}
		_, hasPeriods := last["nr_periods"]
		_, hasBursts := last["nr_bursts"]
		if got.HasThrottling != hasPeriods || got.HasBursts != hasBursts {
			t.Fatalf("ParseBandwidth(%q) = %+v: Has flags disagree with the keys present", b, got)
		}
		// A file with both throttled_time and throttled_usec is not one
		// the kernel writes; whichever came last wins, so only check
		// files with one of each.
		if strings.Count(string(b), "throttled_") > 1 || strings.Count(string(b), "burst_") > 1 {
			return
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("ParseBandwidth(%q) (-strconv +got):\n%s", b, diff)
		}
	})
}
