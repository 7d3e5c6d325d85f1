package cgroupfs

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTIDs(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		prefix  []int32
		want    []int32
		wantErr bool
	}{
		{name: "empty", in: "", want: nil},
		{name: "one", in: "42\n", want: []int32{42}},
		{name: "several", in: "1\n20\n300\n4000000\n", want: []int32{1, 20, 300, 4000000}},
		{name: "no final newline", in: "7\n8", want: []int32{7, 8}},
		{name: "zero left out", in: "5\n0\n6\n", want: []int32{5, 6}},
		{name: "appends", in: "3\n", prefix: []int32{1, 2}, want: []int32{1, 2, 3}},
		{name: "pid_t max", in: "2147483647\n", want: []int32{2147483647}},
		{name: "too big", in: "2147483648\n", wantErr: true},
		{name: "negative", in: "1\n-7\n", wantErr: true},
		{name: "letters", in: "12\nabc\n", wantErr: true},
		{name: "space", in: " 12\n", wantErr: true},
		{name: "empty line", in: "1\n\n2\n", wantErr: true},
		{name: "error keeps prefix", in: "x\n", prefix: []int32{9}, want: []int32{9}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTIDs([]byte(tt.in), tt.prefix)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseTIDs(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrParse) {
				t.Errorf("error %v does not wrap ErrParse", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpEmptyNil); diff != "" {
				t.Errorf("ParseTIDs(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// cmpEmptyNil makes an empty slice equal to nil.
var cmpEmptyNil = cmp.FilterValues(func(a, b []int32) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

func TestParseTIDsAllocs(t *testing.T) {
	var sb strings.Builder
	for i := 1; i <= 5000; i++ {
		sb.WriteString(strconv.Itoa(i))
		sb.WriteByte('\n')
	}
	b := []byte(sb.String())
	dst := make([]int32, 0, 5000)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if dst, err = ParseTIDs(b, dst[:0]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ParseTIDs into a slice with room: %v allocations, want 0", allocs)
	}
}

func FuzzParseTIDs(f *testing.F) {
	for _, name := range []string{"tasks", "cgroup.threads"} {
		for _, b := range fixtureFiles(f, name) {
			f.Add(b)
		}
	}
	f.Add([]byte("2147483648\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseTIDs(b, nil)
		if err != nil {
			if !errors.Is(err, ErrParse) || len(got) != 0 {
				t.Fatalf("ParseTIDs(%q) = %v, %v: want no ids and ErrParse", b, got, err)
			}
			return
		}
		// Formatting the ids back gives the input less its zero lines.
		var want []string
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if n, _ := strconv.ParseInt(line, 10, 32); n != 0 {
				want = append(want, strconv.FormatInt(n, 10))
			}
		}
		var gotS []string
		for _, id := range got {
			if id <= 0 {
				t.Fatalf("ParseTIDs(%q) gave id %d", b, id)
			}
			gotS = append(gotS, strconv.Itoa(int(id)))
		}
		if diff := cmp.Diff(want, gotS); diff != "" {
			t.Fatalf("ParseTIDs(%q) (-want +got):\n%s", b, diff)
		}
	})
}
