package cgroupfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/procfs"
)

func TestParsePressure(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Pressure
		wantErr bool
	}{
		{
			name: "some and full",
			in:   "some avg10=12.50 avg60=8.03 avg300=2.10 total=6200000\nfull avg10=10.00 avg60=6.00 avg300=1.50 total=4100000\n",
			want: Pressure{SomeNanoseconds: 6.2e9, FullNanoseconds: 4.1e9, HasSome: true, HasFull: true},
		},
		{
			name: "some only, before Linux 5.13",
			in:   "some avg10=0.00 avg60=0.00 avg300=0.00 total=1",
			want: Pressure{SomeNanoseconds: 1000, HasSome: true},
		},
		{name: "total first", in: "some total=5 avg10=0.00\n", want: Pressure{SomeNanoseconds: 5000, HasSome: true}},
		{name: "unknown line skipped", in: "other total=x\nsome total=2\n", want: Pressure{SomeNanoseconds: 2000, HasSome: true}},
		{name: "empty", in: "", want: Pressure{}},
		{name: "max", in: "some total=18446744073709551\n", want: Pressure{SomeNanoseconds: 18446744073709551000, HasSome: true}},
		{name: "overflowing ns", in: "some total=18446744073709552\n", wantErr: true},
		{name: "no total", in: "some avg10=0.00 avg60=0.00 avg300=0.00\n", wantErr: true},
		{name: "garbage total", in: "full avg10=0.00 total=12x\n", wantErr: true},
		{name: "some twice", in: "some total=1\nsome total=2\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePressure([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParsePressure(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrParse) {
				t.Errorf("error %v does not wrap ErrParse", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParsePressure(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// TestParsePressureAgainstProcfs reads every cpu.pressure fixture, and the
// machine's own /proc/pressure/cpu where there is one, with
// prometheus/procfs's PSI parser beside ParsePressure: the totals agree.
func TestParsePressureAgainstProcfs(t *testing.T) {
	inputs := fixtureFiles(t, "cpu.pressure")
	if b, err := os.ReadFile("/proc/pressure/cpu"); err == nil {
		inputs = append(inputs, b)
	}
	for _, b := range inputs {
		got, err := ParsePressure(b)
		want, werr := procfsPressure(t, b)
		if (err != nil) != (werr != nil) {
			t.Errorf("%q: ParsePressure error %v, procfs error %v", b, err, werr)
			continue
		}
		if err != nil {
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q (-procfs +ParsePressure):\n%s", b, diff)
		}
	}
}

// procfsPressure parses b with prometheus/procfs, from a proc directory
// of its own.
func procfsPressure(t *testing.T, b []byte) (Pressure, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "pressure"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pressure", "cpu"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := procfs.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := fs.PSIStatsForResource("cpu")
	if err != nil {
		return Pressure{}, err
	}
	var p Pressure
	if s.Some != nil {
		p.SomeNanoseconds, p.HasSome = s.Some.Total*1000, true
	}
	if s.Full != nil {
		p.FullNanoseconds, p.HasFull = s.Full.Total*1000, true
	}
	return p, nil
}

func FuzzParsePressure(f *testing.F) {
	for _, b := range fixtureFiles(f, "cpu.pressure") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParsePressure(b)
		if err != nil {
			if !errors.Is(err, ErrParse) || got != (Pressure{}) {
				t.Fatalf("ParsePressure(%q) = %+v, %v: want zero and ErrParse", b, got, err)
			}
			return
		}
		for _, line := range strings.Split(string(b), "\n") {
			kind, _, _ := strings.Cut(line, " ")
			if (kind == "some" && !got.HasSome) || (kind == "full" && !got.HasFull) {
				t.Fatalf("ParsePressure(%q) = %+v: a %s line was not read", b, got, kind)
			}
		}
		if (!got.HasSome && got.SomeNanoseconds != 0) || (!got.HasFull && got.FullNanoseconds != 0) {
			t.Fatalf("ParsePressure(%q) = %+v: a value without its flag", b, got)
		}
	})
}
