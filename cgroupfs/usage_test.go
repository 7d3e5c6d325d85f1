package cgroupfs

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseCPUStat(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    CPUStat
		wantErr bool
	}{
		{
			name: "no controller",
			in:   "usage_usec 2500000\nuser_usec 1500000\nsystem_usec 1000000\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n",
			want: CPUStat{UsageMicroseconds: 2500000, UserMicroseconds: 1500000, SystemMicroseconds: 1000000},
		},
		{
			name: "core stats only, no final newline",
			in:   "usage_usec 12\nuser_usec 7\nsystem_usec 5",
			want: CPUStat{UsageMicroseconds: 12, UserMicroseconds: 7, SystemMicroseconds: 5},
		},
		{name: "unknown keys skipped", in: "core_sched.force_idle_usec x\nusage_usec 3\n", want: CPUStat{UsageMicroseconds: 3}},
		{name: "max", in: "usage_usec 18446744073709551615\n", want: CPUStat{UsageMicroseconds: 1<<64 - 1}},
		{name: "overflow", in: "usage_usec 18446744073709551616\n", wantErr: true},
		{name: "no usage", in: "user_usec 1\nsystem_usec 2\n", wantErr: true},
		{name: "empty", in: "", wantErr: true},
		{name: "garbage value", in: "usage_usec twelve\n", wantErr: true},
		{name: "two spaces", in: "usage_usec  12\n", wantErr: true},
		{name: "v1 file", in: "123456\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCPUStat([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseCPUStat(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrParse) {
				t.Errorf("error %v does not wrap ErrParse", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseCPUStat(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseUsage(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{in: "0\n", want: 0},
		{in: "123456789\n", want: 123456789},
		{in: "42", want: 42},
		{in: "18446744073709551615\n", want: 1<<64 - 1},
		{in: "18446744073709551616\n", wantErr: true},
		{in: "", wantErr: true},
		{in: "\n", wantErr: true},
		{in: "12 34\n", wantErr: true},
		{in: "12\n\n", wantErr: true},
		{in: "usage_usec 5\n", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseUsage([]byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseUsage(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err != nil && !errors.Is(err, ErrParse) {
			t.Errorf("error %v does not wrap ErrParse", err)
		}
		if got != tt.want {
			t.Errorf("ParseUsage(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestParseCountersAllocs(t *testing.T) {
	stat := []byte("usage_usec 2500000\nuser_usec 1500000\nsystem_usec 1000000\nnr_periods 0\n")
	usage := []byte("123456789\n")
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ParseCPUStat(stat); err != nil {
			t.Fatal(err)
		}
		if _, err := ParseUsage(usage); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ParseCPUStat and ParseUsage: %v allocations, want 0", allocs)
	}
}

func FuzzParseCPUStat(f *testing.F) {
	for _, b := range fixtureFiles(f, "cpu.stat") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseCPUStat(b)
		if err != nil {
			if !errors.Is(err, ErrParse) || got != (CPUStat{}) {
				t.Fatalf("ParseCPUStat(%q) = %+v, %v: want zero and ErrParse", b, got, err)
			}
			return
		}
		// The last usage_usec line holds the usage, as strconv reads it.
		var last string
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				last = v
			}
		}
		if want, err := strconv.ParseUint(last, 10, 64); err != nil || want != got.UsageMicroseconds {
			t.Fatalf("ParseCPUStat(%q) = %+v, last usage_usec line says %q", b, got, last)
		}
	})
}

func FuzzParseUsage(f *testing.F) {
	for _, b := range fixtureFiles(f, "cpuacct.usage") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseUsage(b)
		if err != nil {
			if !errors.Is(err, ErrParse) {
				t.Fatalf("ParseUsage(%q) error %v does not wrap ErrParse", b, err)
			}
			return
		}
		want, perr := strconv.ParseUint(strings.TrimSuffix(string(b), "\n"), 10, 64)
		if perr != nil || got != want {
			t.Fatalf("ParseUsage(%q) = %d, strconv says %d, %v", b, got, want, perr)
		}
	})
}

func TestUseEarlierUsage(t *testing.T) {
	var earlier, l Listing
	for _, c := range []Cgroup{
		{Path: "/", ID: 1, UsageNanoseconds: 900, HasUsage: true},
		{Path: "/a", ID: 2, UsageNanoseconds: 40, HasUsage: true},
		{Path: "/b", ID: 3}, // its counter unread then
		{Path: "/c", ID: 4, UsageNanoseconds: 70, HasUsage: true},  // made again since: another id
		{Path: "/d", ID: 5, UsageNanoseconds: 500, HasUsage: true}, // above the later reading
	} {
		*earlier.Add(c.Path, 0) = c
	}
	for _, c := range []Cgroup{
		{Path: "/", ID: 1, UsageNanoseconds: 1000, HasUsage: true},
		{Path: "/a", ID: 2, UsageNanoseconds: 50, HasUsage: true},
		{Path: "/b", ID: 3, UsageNanoseconds: 60, HasUsage: true},
		{Path: "/c", ID: 6, UsageNanoseconds: 80, HasUsage: true},
		{Path: "/d", ID: 5, UsageNanoseconds: 400, HasUsage: true},
		{Path: "/e", ID: 7, UsageNanoseconds: 90, HasUsage: true}, // made since
		{Path: "/f"}, // not examined
	} {
		*l.Add(c.Path, 0) = c
	}
	l.UseEarlierUsage(&earlier)
	got := map[string]uint64{}
	for _, c := range l.Cgroups {
		if c.HasUsage {
			got[c.Path] = c.UsageNanoseconds
		}
	}
	want := map[string]uint64{"/": 900, "/a": 40, "/b": 60, "/c": 80, "/d": 400, "/e": 90}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counters after UseEarlierUsage (-want +got):\n%s", diff)
	}
}
