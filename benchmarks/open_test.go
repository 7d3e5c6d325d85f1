package benchmarks_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/procsource"
	"github.com/schedstatd/schedstatd/schedstat"
	"golang.org/x/sys/unix"
)

// openBatch is how many tasks one op opens.
const openBatch = 100

// BenchmarkOpen is the cost of the first sight of a task: opening it as the
// table does for a task it has not seen (procsource.Open: the task
// directory, the start time from stat, the schedstat fd), for threads of a
// process of 100, 2,000 and 10,000 threads. /proc/<tid>/stat describes the
// whole thread group when read through /proc/<tid> and sums the CPU time
// of every thread in it, so its cost grows with the size of the process;
// task-stat is the same open with the start time read from
// /proc/<tid>/task/<tid>/stat, which describes the thread alone. One op
// opens and closes openBatch tasks; ns/task is per task opened.
// unkept-read is a pass's read of a task the table tracks without a kept
// fd, beyond the open-file limit (procsource.Unkept): it checks the start
// time, and so reads stat, on every pass.
func BenchmarkOpen(b *testing.B) {
	sizes := []int{100, 2000, 10000}
	if testing.Short() {
		sizes = sizes[:2]
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("threads-in-process=%d", n), func(b *testing.B) {
			p := testproc.StartSleepers(b, n)
			tids := p.Workers[:openBatch]
			b.Run("procsource.Open", func(b *testing.B) {
				measure(b, modes[0], openBatch, func() {
					for _, tid := range tids {
						t, err := procsource.Open("/proc", tid)
						if err != nil {
							b.Fatal(err)
						}
						t.Close()
					}
				})
			})
			buf := make([]byte, 1024)
			b.Run("task-stat", func(b *testing.B) {
				measure(b, modes[0], openBatch, func() {
					for _, tid := range tids {
						fd, err := openViaTaskStat(tid, buf)
						if err != nil {
							b.Fatal(err)
						}
						unix.Close(fd)
					}
				})
			})
			b.Run("unkept-read", func(b *testing.B) {
				unkept := make([]*procsource.Unkept, len(tids))
				for i, tid := range tids {
					u, err := procsource.OpenUnkept("/proc", tid)
					if err != nil {
						b.Fatal(err)
					}
					unkept[i] = u
				}
				measure(b, modes[0], openBatch, func() {
					for _, u := range unkept {
						if _, err := u.Read(); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		})
	}
}

// openViaTaskStat opens /proc/<tid>/schedstat as procsource.Open does,
// through an O_PATH fd on /proc/<tid> that pins the task, but reads the
// start time from task/<tid>/stat below it. It returns the schedstat fd.
func openViaTaskStat(tid int32, buf []byte) (int, error) {
	id := strconv.Itoa(int(tid))
	dirfd, err := unix.Open("/proc/"+id, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(dirfd)
	statfd, err := unix.Openat(dirfd, "task/"+id+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	n, err := unix.Pread(statfd, buf, 0)
	unix.Close(statfd)
	if err != nil {
		return -1, err
	}
	if _, err := schedstat.ParseStartTime(buf[:n]); err != nil {
		return -1, err
	}
	return unix.Openat(dirfd, "schedstat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
}
