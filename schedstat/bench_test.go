package schedstat_test

import (
	"testing"

	"github.com/schedstatd/schedstatd/schedstat"
)

func BenchmarkParse(b *testing.B) {
	in := []byte("2041578613 31254893 1987\n")
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := schedstat.Parse(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseStartTime(b *testing.B) {
	in, err := loadFixture("sleep.stat")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := schedstat.ParseStartTime(in); err != nil {
			b.Fatal(err)
		}
	}
}
