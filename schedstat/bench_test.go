package schedstat_test

import (
	"os"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/schedstatd/schedstatd/schedstat"
)

// selfSchedstatPath locks the benchmark to its thread and returns that
// thread's schedstat path.
func selfSchedstatPath(b *testing.B) (int, string) {
	b.Helper()
	runtime.LockOSThread()
	b.Cleanup(runtime.UnlockOSThread)
	tid := unix.Gettid()
	return tid, "/proc/self/task/" + strconv.Itoa(tid) + "/schedstat"
}

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

// BenchmarkRead is the hot path: one pread on an fd kept open since the
// task was first seen, parsed in place.
func BenchmarkRead(b *testing.B) {
	tid, _ := selfSchedstatPath(b)
	task, err := schedstat.Open("/proc", int32(tid))
	if err != nil {
		b.Fatal(err)
	}
	defer task.Close()
	buf := make([]byte, schedstat.BufferSize)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := task.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen is the once-per-task cost: open the task directory, read
// the start time from stat, open schedstat.
func BenchmarkOpen(b *testing.B) {
	tid, _ := selfSchedstatPath(b)
	b.ReportAllocs()
	for b.Loop() {
		task, err := schedstat.Open("/proc", int32(tid))
		if err != nil {
			b.Fatal(err)
		}
		task.Close()
	}
}

// BenchmarkReadFile is the baseline of a per-process reader: os.ReadFile
// of the path on every pass, then Parse.
func BenchmarkReadFile(b *testing.B) {
	_, path := selfSchedstatPath(b)
	b.ReportAllocs()
	for b.Loop() {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := schedstat.Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenReadClose is the baseline without a kept fd: open, read and
// close on every pass, into a reused buffer.
func BenchmarkOpenReadClose(b *testing.B) {
	_, path := selfSchedstatPath(b)
	buf := make([]byte, schedstat.BufferSize)
	b.ReportAllocs()
	for b.Loop() {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		n, err := unix.Read(fd, buf)
		unix.Close(fd)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := schedstat.Parse(buf[:n]); err != nil {
			b.Fatal(err)
		}
	}
}
