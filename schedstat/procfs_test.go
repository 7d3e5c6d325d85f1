package schedstat_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/procfs"

	"github.com/schedstatd/schedstatd/internal/testkit/testproc"
	"github.com/schedstatd/schedstatd/schedstat"
)

// The differential checks below assert only what is a real contract.
// Whatever Parse accepts, procfs accepts too, with the same values. For
// /proc/<tid>/stat, where both accept a kernel-shaped line they agree on
// field 22. procfs is more lenient in most ways, so the converse is not
// asserted:
//
//   - Its schedstat parser is the unanchored regexp `(\d+) (\d+) (\d+)`, so
//     it takes the first run of three space-separated numbers anywhere in
//     the file: it accepts extra fields ("1 2 3 4"), trailing bytes
//     ("1 2 3\r\n", "1 2 3\n\n", "1 2 3\nxyz", "1 2 3 "), leading bytes
//     (" 1 2 3", "+1 2 3", "x1 2 3") and even reads "-123 456 7" as 123,
//     dropping the sign.
//   - Its stat parser reads the fields after the last ')' with fmt.Fscan,
//     which treats newlines as spaces, takes runs of spaces as one, accepts
//     base prefixes and underscores in numbers ("0x10"). It is also
//     stricter in one way: it needs about 50 fields where ParseStartTime
//     needs 22. Because it counts whitespace runs, not single spaces, the
//     two disagree on lines the kernel never writes (a newline or two
//     spaces between fields), so the fuzz targets do not compare stat
//     parsers. On a file that ends right after the ')' procfs panics with a
//     slice bound out of range, which fakeProcfs.startTime turns
//     into an error.

// fakeProcfs is a procfs.FS over a temporary directory holding one task,
// 1, whose files the helpers below overwrite before each parse. It is not
// safe for concurrent use: fuzz inputs run one at a time in each process.
type fakeProcfs struct {
	dir   string
	fs    procfs.FS
	files map[string]*os.File
}

func newFakeProcfs(t testing.TB) *fakeProcfs {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := procfs.NewFS(root)
	if err != nil {
		t.Fatalf("procfs.NewFS(%s): %v", root, err)
	}
	p := &fakeProcfs{dir: dir, fs: fs, files: map[string]*os.File{}}
	t.Cleanup(func() {
		for _, f := range p.files {
			f.Close()
		}
	})
	return p
}

// proc sets the contents of file and returns task 1. It rewrites the file
// in place, writing first and then shrinking it, because on ext4
// truncating a file to zero and closing it forces a flush to disk, which
// made each fuzz input cost half a millisecond.
func (p *fakeProcfs) proc(t testing.TB, file string, b []byte) procfs.Proc {
	t.Helper()
	f := p.files[file]
	if f == nil {
		var err error
		if f, err = os.Create(filepath.Join(p.dir, file)); err != nil {
			t.Fatal(err)
		}
		p.files[file] = f
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(len(b))); err != nil {
		t.Fatal(err)
	}
	proc, err := p.fs.Proc(1)
	if err != nil {
		t.Fatalf("procfs Proc(1): %v", err)
	}
	return proc
}

// schedstat parses b with procfs's /proc/<pid>/schedstat reader. Setup
// failures end the test; only procfs's own verdict is returned.
func (p *fakeProcfs) schedstat(t testing.TB, b []byte) (schedstat.Stat, error) {
	t.Helper()
	s, err := p.proc(t, "schedstat", b).Schedstat()
	if err != nil {
		return schedstat.Stat{}, err
	}
	return schedstat.Stat{RunNanoseconds: s.RunningNanoseconds, WaitNanoseconds: s.WaitingNanoseconds, Timeslices: s.RunTimeslices}, nil
}

// startTime parses b with procfs's /proc/<pid>/stat reader and returns
// field 22.
func (p *fakeProcfs) startTime(t testing.TB, b []byte) (start uint64, err error) {
	t.Helper()
	proc := p.proc(t, "stat", b)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("procfs panicked: %v", r)
		}
	}()
	s, err := proc.Stat()
	if err != nil {
		return 0, err
	}
	return s.Starttime, nil
}

// checkParseAgainstProcfs asserts the contract above for one input and
// reports whether procfs accepted an input Parse rejects.
func checkParseAgainstProcfs(t testing.TB, fake *fakeProcfs, b []byte) (procfsMoreLenient bool) {
	t.Helper()
	ours, err := schedstat.Parse(b)
	theirs, perr := fake.schedstat(t, b)
	switch {
	case err == nil && perr != nil:
		t.Errorf("Parse(%q) = %+v but procfs rejects it: %v", b, ours, perr)
	case err == nil:
		if diff := cmp.Diff(theirs, ours); diff != "" {
			t.Errorf("Parse(%q) disagrees with procfs (-procfs +Parse):\n%s", b, diff)
		}
	case perr == nil:
		return true
	}
	return false
}

// checkStartTimeAgainstProcfs asserts that where ParseStartTime and procfs
// both accept b they agree on field 22, and reports whether procfs accepted
// an input ParseStartTime rejects. procfs needs more fields than
// ParseStartTime, so it may reject what ParseStartTime accepts.
func checkStartTimeAgainstProcfs(t testing.TB, fake *fakeProcfs, b []byte) (procfsMoreLenient bool) {
	t.Helper()
	ours, err := schedstat.ParseStartTime(b)
	theirs, perr := fake.startTime(t, b)
	switch {
	case err == nil && perr == nil:
		if ours != theirs {
			t.Errorf("ParseStartTime(%q) = %d, procfs says %d", b, ours, theirs)
		}
	case perr == nil:
		return true
	}
	return false
}

func TestParseMatchesProcfsFixtures(t *testing.T) {
	fake := newFakeProcfs(t)
	for _, name := range fixtureNames(t, "*.schedstat") {
		b, err := loadFixture(name)
		if err != nil {
			t.Fatal(err)
		}
		if checkParseAgainstProcfs(t, fake, b) {
			t.Logf("%s: procfs accepts %q, Parse rejects it", name, b)
		}
	}
	for _, name := range fixtureNames(t, "*.stat") {
		b, err := loadFixture(name)
		if err != nil {
			t.Fatal(err)
		}
		if checkStartTimeAgainstProcfs(t, fake, b) {
			t.Logf("%s: procfs accepts %q, ParseStartTime rejects it", name, b)
		}
	}
}

// TestParseMatchesProcfsLive runs both parsers over the real files of this
// process's threads: the same bytes through both parsers must agree exactly,
// and procfs reading the live file itself must land between two of our
// reads, since a thread's counters only grow.
func TestParseMatchesProcfsLive(t *testing.T) {
	// Make sure there is more than one thread to look at.
	done := make(chan struct{})
	defer close(done)
	for range 3 {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			<-done
		}()
	}

	fake := newFakeProcfs(t)
	procFS, err := procfs.NewFS("/proc")
	if err != nil {
		t.Fatal(err)
	}
	tids := testproc.Threads(t, os.Getpid())
	if len(tids) < 2 {
		t.Fatalf("found %d threads in /proc/self/task, want several", len(tids))
	}
	checked := 0
	for _, tid := range tids {
		err := checkLiveTask(t, procFS, fake, int(tid))
		if schedstat.IsGone(err) {
			// A thread of this process, from some earlier test, exited.
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		checked++
	}
	if checked < 2 {
		t.Fatalf("checked %d live threads, want at least 2", checked)
	}
}

// checkLiveTask compares Parse and ParseStartTime with procfs over one live
// thread of this process. Disagreements fail t; I/O errors are returned.
func checkLiveTask(t *testing.T, procFS procfs.FS, fake *fakeProcfs, tid int) error {
	t.Helper()
	dir := "/proc/self/task/" + strconv.Itoa(tid)
	b, err := os.ReadFile(dir + "/schedstat")
	if err != nil {
		return err
	}
	before, err := schedstat.Parse(b)
	if err != nil {
		t.Fatalf("%s/schedstat: %v", dir, err)
	}
	checkParseAgainstProcfs(t, fake, b)

	p, err := procFS.Proc(tid)
	if err != nil {
		return err
	}
	live, err := p.Schedstat()
	if err != nil {
		return fmt.Errorf("procfs /proc/%d/schedstat: %w", tid, err)
	}
	b, err = os.ReadFile(dir + "/schedstat")
	if err != nil {
		return err
	}
	after, err := schedstat.Parse(b)
	if err != nil {
		t.Fatalf("%s/schedstat: %v", dir, err)
	}
	mid := schedstat.Stat{RunNanoseconds: live.RunningNanoseconds, WaitNanoseconds: live.WaitingNanoseconds, Timeslices: live.RunTimeslices}
	if !before.AtMost(mid) || !mid.AtMost(after) {
		t.Errorf("tid %d: procfs read %+v, not between our reads %+v and %+v", tid, mid, before, after)
	}

	b, err = os.ReadFile(dir + "/stat")
	if err != nil {
		return err
	}
	start, err := schedstat.ParseStartTime(b)
	if err != nil {
		t.Fatalf("%s/stat: %v", dir, err)
	}
	checkStartTimeAgainstProcfs(t, fake, b)
	if want := field22(t, string(b)); start != want {
		t.Errorf("tid %d: ParseStartTime = %d, field 22 is %d", tid, start, want)
	}
	ps, err := p.Stat()
	if err != nil {
		return fmt.Errorf("procfs /proc/%d/stat: %w", tid, err)
	}
	if ps.Starttime != start {
		t.Errorf("tid %d: ParseStartTime = %d, procfs live Starttime = %d", tid, start, ps.Starttime)
	}
	return nil
}

// field22 returns field 22 of a /proc/<tid>/stat line, found independently
// of ParseStartTime: split the text after the last ')' on whitespace.
func field22(t testing.TB, line string) uint64 {
	t.Helper()
	i := strings.LastIndex(line, ")")
	if i < 0 {
		t.Fatalf("no ')' in stat line %q", line)
	}
	f := strings.Fields(line[i+1:])
	if len(f) < 20 {
		t.Fatalf("stat line %q has %d fields after the command name, want at least 20", line, len(f))
	}
	n, err := strconv.ParseUint(f[22-3], 10, 64)
	if err != nil {
		t.Fatalf("field 22 of %q: %v", line, err)
	}
	return n
}
