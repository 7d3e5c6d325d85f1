package procsource_test

import (
	"os"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/schedstatd/schedstatd/procsource"
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

// BenchmarkRead is the hot path: one pread on an fd kept open since the
// task was first seen, parsed in place.
func BenchmarkRead(b *testing.B) {
	tid, _ := selfSchedstatPath(b)
	task, err := procsource.Open("/proc", int32(tid))
	if err != nil {
		b.Fatal(err)
	}
	defer task.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := task.Read(); err != nil {
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
		task, err := procsource.Open("/proc", int32(tid))
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
	var buf [128]byte
	b.ReportAllocs()
	for b.Loop() {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		n, err := unix.Read(fd, buf[:])
		unix.Close(fd)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := schedstat.Parse(buf[:n]); err != nil {
			b.Fatal(err)
		}
	}
}
