package taskiter

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"golang.org/x/sys/unix"
)

// Lister lists the walked hierarchy with the threads of each cgroup taken
// from one read of the iterator: it runs Source.Read, walks the
// hierarchy's directories for the tree and each cgroup's own CPU counter,
// and files every live task under the directory whose inode number is the
// task's cgroup id. It reads no tasks or cgroup.threads file. A Lister
// belongs to the goroutine that owns the table.
type Lister struct {
	s         *Source
	dir       string // walked hierarchy root, absolute
	usageDir  string // root of the hierarchy holding the counters, or ""
	usageFile string // counter file in each cgroup: cpu.stat or cpuacct.usage
	v2usage   bool

	byID  map[uint64]int32 // cgroup id -> index in the listing, this pass
	buf   []byte           // file contents
	dents []byte           // getdents64 records
	stat  unix.Stat_t
}

var _ cgroupfs.Lister = (*Lister)(nil)

// Lister returns a Lister over the hierarchy s was opened for.
func (s *Source) Lister() *Lister {
	l := &Lister{
		s:     s,
		dir:   s.hier.Dir(),
		byID:  make(map[uint64]int32),
		buf:   make([]byte, 4096),
		dents: make([]byte, 8192),
	}
	if f := s.hier.UsageFile(); f != "" {
		l.usageDir, l.usageFile = filepath.Dir(f), filepath.Base(f)
		l.v2usage = l.usageFile == "cpu.stat"
	}
	return l
}

// List implements cgroupfs.Lister. An error reading the iterator or the
// hierarchy's root is returned and l is then empty.
func (l *Lister) List(out *cgroupfs.Listing) error {
	out.Reset()
	if err := l.s.Read(); err != nil {
		return err
	}
	clear(l.byID)
	if err := l.walk(out, "/", -1); err != nil {
		out.Reset()
		return err
	}
	var unresolved uint64
	for i := range l.s.recs {
		r := &l.s.recs[i]
		if r.zombie {
			// Cgroup files list no zombies either; the table reads them
			// as unlisted tasks, whose counters are final.
			continue
		}
		c, ok := l.byID[r.cgroup]
		if !ok {
			unresolved++
			continue
		}
		cg := &out.Cgroups[c]
		cg.TIDs = append(cg.TIDs, r.tid)
	}
	l.s.unresolved.Add(unresolved)
	return nil
}

// walk adds the cgroup at rel and, depth first, its descendants. Only an
// error on the root is returned; a cgroup removed during the walk is left
// out.
func (l *Lister) walk(out *cgroupfs.Listing, rel string, parent int) error {
	dir := l.dir
	if rel != "/" {
		dir = l.dir + rel
	}
	if err := unix.Stat(dir, &l.stat); err != nil {
		if parent < 0 {
			return fmt.Errorf("taskiter: %s: %w", dir, err)
		}
		return nil
	}
	idx := len(out.Cgroups)
	c := out.Add(rel, parent)
	l.byID[l.stat.Ino] = int32(idx)
	l.usage(c, rel)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if parent < 0 {
			return fmt.Errorf("taskiter: %s: %w", dir, err)
		}
		return nil
	}
	var kids []string
	for {
		n, err := unix.Getdents(fd, l.dents)
		if err != nil || n <= 0 {
			break
		}
		kids = appendDirs(kids, l.dents[:n])
	}
	unix.Close(fd)
	for _, k := range kids {
		child := "/" + k
		if rel != "/" {
			child = rel + "/" + k
		}
		if err := l.walk(out, child, idx); err != nil {
			return err
		}
	}
	return nil
}

// appendDirs appends the names of the subdirectories in b, getdents64
// records, other than . and ..
func appendDirs(names []string, b []byte) []string {
	for len(b) >= 19 {
		reclen := int(b[16]) | int(b[17])<<8
		if reclen == 0 || reclen > len(b) {
			break
		}
		typ := b[18]
		name := b[19:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if typ == unix.DT_DIR && string(name) != "." && string(name) != ".." {
			names = append(names, string(name))
		}
		b = b[reclen:]
	}
	return names
}

// usage reads the cgroup's own CPU counter into c, if the hierarchy has
// one.
func (l *Lister) usage(c *cgroupfs.Cgroup, rel string) {
	if l.usageFile == "" {
		return
	}
	path := l.usageDir + "/" + l.usageFile
	if rel != "/" {
		path = l.usageDir + rel + "/" + l.usageFile
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		c.Err = err
		return
	}
	n, err := unix.Read(fd, l.buf)
	unix.Close(fd)
	if err != nil {
		c.Err = err
		return
	}
	if l.v2usage {
		st, err := cgroupfs.ParseCPUStat(l.buf[:n])
		if err != nil {
			c.Err = err
			return
		}
		c.UsageNanoseconds, c.HasUsage = st.UsageMicroseconds*1000, true
		return
	}
	v, err := cgroupfs.ParseUsage(l.buf[:n])
	if err != nil {
		c.Err = err
		return
	}
	c.UsageNanoseconds, c.HasUsage = v, true
}
