package kernels

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
)

// cpioWriter writes an initramfs: a cpio archive in the kernel's "newc"
// format (see the kernel's Documentation/driver-api/early-userspace),
// uncompressed, which the kernel unpacks fastest under emulation.
type cpioWriter struct {
	w   *bufio.Writer
	ino int
	err error
}

// File modes in a newc header.
const (
	modeDir  = 0o040000
	modeFile = 0o100000
	modeChar = 0o020000
)

func newCPIO(w io.Writer) *cpioWriter { return &cpioWriter{w: bufio.NewWriterSize(w, 1<<20)} }

// header writes the header and the padded name of one entry.
func (c *cpioWriter) header(name string, mode, size, rdevMajor, rdevMinor int) {
	if c.err != nil {
		return
	}
	c.ino++
	nlink := 1
	if mode&modeDir != 0 {
		nlink = 2
	}
	_, c.err = fmt.Fprintf(c.w, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%s\x00",
		c.ino, mode, 0, 0, nlink, 0, size, 0, 0, rdevMajor, rdevMinor, len(name)+1, 0, name)
	c.pad(110 + len(name) + 1)
}

func (c *cpioWriter) pad(n int) {
	if c.err == nil && n%4 != 0 {
		_, c.err = c.w.Write(make([]byte, 4-n%4))
	}
}

// dir adds a directory.
func (c *cpioWriter) dir(name string) { c.header(name, modeDir|0o755, 0, 0, 0) }

// char adds a character device node.
func (c *cpioWriter) char(name string, major, minor int) {
	c.header(name, modeChar|0o600, 0, major, minor)
}

// bytes adds a regular file with contents b and permission bits perm.
func (c *cpioWriter) bytes(name string, b []byte, perm int) {
	c.header(name, modeFile|perm, len(b), 0, 0)
	if c.err == nil {
		_, c.err = c.w.Write(b)
	}
	c.pad(len(b))
}

// file adds the regular file src as name, with src's permission bits.
func (c *cpioWriter) file(name, src string) {
	if c.err != nil {
		return
	}
	f, err := os.Open(src)
	if err != nil {
		c.err = err
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		c.err = err
		return
	}
	c.header(name, modeFile|int(st.Mode().Perm()), int(st.Size()), 0, 0)
	if c.err != nil {
		return
	}
	n, err := io.Copy(c.w, f)
	if err == nil && n != st.Size() {
		err = fmt.Errorf("%s changed while it was copied", src)
	}
	c.err = err
	c.pad(int(n))
}

// tree adds the directory src and everything below it as name.
func (c *cpioWriter) tree(name, src string) {
	ents, err := os.ReadDir(src)
	if err != nil {
		if c.err == nil {
			c.err = err
		}
		return
	}
	c.dir(name)
	for _, e := range ents {
		n, s := path.Join(name, e.Name()), path.Join(src, e.Name())
		switch {
		case e.IsDir():
			c.tree(n, s)
		case e.Type().IsRegular():
			c.file(n, s)
		}
	}
}

// close writes the trailer and flushes.
func (c *cpioWriter) close() error {
	c.header("TRAILER!!!", 0, 0, 0, 0)
	if c.err != nil {
		return c.err
	}
	return c.w.Flush()
}
