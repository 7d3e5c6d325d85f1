package cgroupfs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/schedstatd/schedstatd/internal/testkit/benchx"
	"golang.org/x/sys/unix"
)

// benchCgroups is the size of the benchmark tree: the test cgroup, 9
// slices and 110 cgroups in each, as on a node with a few hundred pods.
const benchCgroups = 1 + 9 + 9*110

// benchTree makes the benchmark tree in the real hierarchy name and
// returns the layout that walks only it.
func benchTree(b *testing.B, name string) layout {
	hdir := realHierarchy(b, name)
	var rels []string
	for s := range 9 {
		rels = append(rels, fmt.Sprintf("slice%d", s))
		for c := range 110 {
			rels = append(rels, fmt.Sprintf("slice%d/cg%d", s, c))
		}
	}
	top := filepath.Join(hdir, makeCgroups(b, hdir, rels...))
	if name == Unified {
		return layout{version: V2, name: name, dir: top, usage: cpuStatUsage, kernfs: true}
	}
	return layout{version: V1, name: name, dir: top, usage: usageSource{file: usageFileV1}, kernfs: true}
}

// BenchmarkWalk compares a full walk of 1,000 real cgroups (each
// cgroup's threads and counter files, and a readdir of each cgroup whose
// link count says it has children; walk-readdir-every-cgroup lists every
// one, as on a filesystem without that link count) with
// what an inotify-driven lister must still do when nothing changed:
// read every cgroup's threads and counter files, because membership
// changes raise no inotify event, through directory fds kept open. The
// difference is all inotify could save. os-walk is the plain library
// way, for scale.
func BenchmarkWalk(b *testing.B) {
	for _, name := range []string{"cpuacct", Unified} {
		b.Run(name+fmt.Sprintf("/cgroups=%d", benchCgroups), func(b *testing.B) {
			lay := benchTree(b, name)
			for _, mode := range []struct {
				name   string
				kernfs bool
			}{{"walk", true}, {"walk-readdir-every-cgroup", false}} {
				b.Run(mode.name, func(b *testing.B) {
					lay := lay
					lay.kernfs = mode.kernfs
					before := benchx.HeapAfterGC()
					h := newHierarchy(lay)
					var l Listing
					if err := h.List(&l); err != nil {
						b.Fatal(err)
					}
					kept := benchx.HeapAfterGC() - before
					b.ReportAllocs()
					for b.Loop() {
						if err := h.List(&l); err != nil {
							b.Fatal(err)
						}
					}
					reportPerCgroup(b, len(l.Cgroups))
					// What the walker's cache of the tree and a listing hold
					// between passes.
					b.ReportMetric(float64(kept)/float64(len(l.Cgroups)), "live-B/cgroup")
					runtime.KeepAlive(h)
				})
			}
			b.Run("files-only", func(b *testing.B) {
				h := newHierarchy(lay)
				var l Listing
				if err := h.List(&l); err != nil {
					b.Fatal(err)
				}
				fds := keptDirFDs(b, lay.dir, &l)
				threads := cstring(threadsFile(h.w.v2))
				usage := cstring(h.w.usageFile)
				b.ReportAllocs()
				for b.Loop() {
					for i, fd := range fds {
						c := &l.Cgroups[i]
						err := h.w.read(fd, threads, c.Path)
						if err == nil {
							c.TIDs, err = ParseTIDs(h.w.buf, c.TIDs[:0])
						}
						if err == nil {
							err = h.w.read(fd, usage, c.Path)
						}
						if err == nil {
							c.UsageNanoseconds, err = h.w.parseUsage(h.w.buf)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				}
				reportPerCgroup(b, len(fds))
			})
			b.Run("os-walk", func(b *testing.B) {
				threads := threadsFile(lay.version == V2)
				b.ReportAllocs()
				for b.Loop() {
					n := 0
					err := filepath.WalkDir(lay.dir, func(path string, d fs.DirEntry, err error) error {
						if err != nil || !d.IsDir() {
							return err
						}
						n++
						data, err := os.ReadFile(filepath.Join(path, threads))
						if err == nil {
							_, err = ParseTIDs(data, nil)
						}
						return err
					})
					if err != nil || n != benchCgroups {
						b.Fatal(n, err)
					}
				}
				reportPerCgroup(b, benchCgroups)
			})
		})
	}
}

// keptDirFDs opens the directory of every cgroup in l, under dir, and
// keeps them open until the benchmark ends.
func keptDirFDs(b *testing.B, dir string, l *Listing) []int {
	fds := make([]int, 0, len(l.Cgroups))
	b.Cleanup(func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	})
	for _, c := range l.Cgroups {
		fd, err := unix.Open(filepath.Join(dir, c.Path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		fds = append(fds, fd)
	}
	return fds
}

// reportPerCgroup reports the time per cgroup and the cgroups per pass.
func reportPerCgroup(b *testing.B, cgroups int) {
	if cgroups != benchCgroups {
		b.Fatalf("%d cgroups per pass, want %d", cgroups, benchCgroups)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(cgroups), "ns/cgroup")
	b.ReportMetric(float64(cgroups), "cgroups")
}
