package exitcapture

import (
	"io/fs"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"
)

// cgroupIndex maps cgroup v2 ids to cgroup paths relative to the unified
// hierarchy's root. An id is the inode number of the cgroup's directory,
// so the index is built by walking the hierarchy, and walked again when an
// id it does not know comes in: a cgroup made since the last walk. Walks
// are at least interval apart, so a burst of new cgroups costs one walk per
// interval; a lookup that needs a walk sooner is told to ask again. An id
// is unique for the life of the system, so one a walk did not find (its
// cgroup was removed before the walk) is remembered as missing and costs
// no walk again.
//
// Each walk starts a generation, and the index keeps the previous one too:
// a cgroup removed since still resolves to its last path, whose nearest
// existing ancestor the table then credits. Two generations bound the
// index by the cgroups of two walks.
//
// Only the reader goroutine calls its methods; the counters may be read
// from any.
type cgroupIndex struct {
	root     string
	interval time.Duration
	now      func() time.Time

	cur, prev        map[uint64]string
	missing, wasGone map[uint64]struct{}
	scanned          time.Time

	scans, unknown atomic.Uint64
}

// newCgroupIndex walks the hierarchy at root once; it fails if root cannot
// be read.
func newCgroupIndex(root string, interval time.Duration) (*cgroupIndex, error) {
	c := &cgroupIndex{root: root, interval: interval, now: time.Now}
	if err := c.scan(); err != nil {
		return nil, err
	}
	return c, nil
}

// path returns the path of the cgroup with id, walking the hierarchy if
// the id is new and a walk is due. The path is "" if the cgroup was
// removed before a walk could find it: the record is unattributed and the
// table credits the hierarchy's root. path reports false, and does not
// count the id, when the id is new and no walk is due yet: the caller
// holds the record and calls settle after the next walk.
func (c *cgroupIndex) path(id uint64) (string, bool) {
	if p, ok := c.lookup(id); ok {
		return p, true
	}
	if c.gone(id) {
		c.unknown.Add(1)
		return "", true
	}
	if !c.due() {
		return "", false
	}
	c.scan()
	return c.settle(id), true
}

// settle returns the path of id as the last walk found it, or "", marking
// the id missing.
func (c *cgroupIndex) settle(id uint64) string {
	if p, ok := c.lookup(id); ok {
		return p
	}
	if c.missing == nil {
		c.missing = make(map[uint64]struct{})
	}
	c.missing[id] = struct{}{}
	c.unknown.Add(1)
	return ""
}

// due reports whether the interval has passed since the last walk.
func (c *cgroupIndex) due() bool { return c.now().Sub(c.scanned) >= c.interval }

func (c *cgroupIndex) lookup(id uint64) (string, bool) {
	if p, ok := c.cur[id]; ok {
		return p, true
	}
	p, ok := c.prev[id]
	return p, ok
}

func (c *cgroupIndex) gone(id uint64) bool {
	_, a := c.missing[id]
	_, b := c.wasGone[id]
	return a || b
}

// scan walks the hierarchy and starts a new generation. Directories that
// vanish during the walk are left out. If the root cannot be read, the
// index keeps what it had and the error is returned.
func (c *cgroupIndex) scan() error {
	c.scanned = c.now()
	c.scans.Add(1)
	m := make(map[uint64]string, len(c.cur))
	err := filepath.WalkDir(c.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == c.root {
				return err
			}
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(path, &st) != nil {
			return nil
		}
		m[st.Ino] = relative(c.root, path)
		return nil
	})
	if err != nil {
		return err
	}
	c.prev, c.cur = c.cur, m
	c.wasGone, c.missing = c.missing, make(map[uint64]struct{})
	return nil
}

// relative returns dir as a cgroup path: "/" for root, "/a/b" below it.
func relative(root, dir string) string {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." {
		return "/"
	}
	return "/" + filepath.ToSlash(rel)
}
