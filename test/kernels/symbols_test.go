package kernels

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// symbols maps kernel text addresses to function names, from a kernel's
// /proc/kallsyms. The VMs boot with nokaslr and load no module, so every
// boot of a kernel has the same addresses: the table is read once, in a
// VM of its own, when a guest of that kernel first freezes, and kept
// beside the kernel (Debian's packages ship only a stub System.map).
type symbols struct {
	addrs []uint64
	names []string
}

// readSymbols reads the text symbols of a kallsyms (or System.map) file.
func readSymbols(path string) (*symbols, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := &symbols{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 3 || (fs[1] != "t" && fs[1] != "T") {
			continue
		}
		a, err := strconv.ParseUint(fs[0], 16, 64)
		if err != nil {
			continue
		}
		s.addrs = append(s.addrs, a)
		s.names = append(s.names, fs[2])
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(s.addrs) == 0 {
		return nil, fmt.Errorf("%s: no text symbols", path)
	}
	// kallsyms is mostly sorted by address; make sure.
	if !slices.IsSorted(s.addrs) {
		idx := make([]int, len(s.addrs))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return cmpU64(s.addrs[a], s.addrs[b]) })
		addrs, names := make([]uint64, len(idx)), make([]string, len(idx))
		for i, j := range idx {
			addrs[i], names[i] = s.addrs[j], s.names[j]
		}
		s.addrs, s.names = addrs, names
	}
	return s, nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lookup returns "name+0xoff" for a text address, or "" outside the text
// the map covers (the last symbol's end is unknown: 1 MiB past it is
// taken as outside).
func (s *symbols) lookup(a uint64) string {
	if s == nil || len(s.addrs) == 0 || a < s.addrs[0] || a > s.addrs[len(s.addrs)-1]+1<<20 {
		return ""
	}
	i, found := slices.BinarySearch(s.addrs, a)
	if !found {
		i--
	}
	return fmt.Sprintf("%s+%#x", s.names[i], a-s.addrs[i])
}

var hexWord = regexp.MustCompile(`(?:\b|0x)(ffffffff[0-9a-f]{8})\b`)

// annotate appends the function of every kernel text address in text to
// its line.
func (s *symbols) annotate(text string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		var names []string
		for _, m := range hexWord.FindAllStringSubmatch(line, -1) {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			if n := s.lookup(a); n != "" {
				names = append(names, n)
			}
		}
		if len(names) > 0 {
			line += "  <" + strings.Join(names, " ") + ">"
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// kallsymsInit is the /init of the VM that reads a kernel's symbols.
const kallsymsInit = `#!/bin/busybox sh
/bin/busybox mount -t devtmpfs dev /dev
/bin/busybox mount -t proc proc /proc
/bin/busybox stty -F /dev/ttyS1 raw -echo 2>/dev/null
/bin/busybox cat /proc/kallsyms > /dev/ttyS1
/bin/busybox sync
/bin/busybox poweroff -f
`

// kernelSymbols returns the symbols of the kernel at vmlinuz, read once by
// booting it with kallsymsInit and kept in a file beside it.
func kernelSymbols(vmlinuz string) (*symbols, error) {
	// Not vmlinuz-*: that names the cached image.
	path := filepath.Join(filepath.Dir(vmlinuz), "kallsyms-"+strings.TrimPrefix(filepath.Base(vmlinuz), "vmlinuz-"))
	if s, err := readSymbols(path); err == nil {
		return s, nil
	}
	dir, err := os.MkdirTemp("", "schedstatd-kallsyms-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	initrd := filepath.Join(dir, "initramfs.cpio")
	f, err := os.Create(initrd)
	if err != nil {
		return nil, err
	}
	c := newCPIO(f)
	for _, d := range []string{"bin", "dev", "proc"} {
		c.dir(d)
	}
	c.char("dev/console", 5, 1)
	c.bytes("init", []byte(kallsymsInit), 0o755)
	c.file("bin/busybox", "/bin/busybox")
	err = c.close()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "kallsyms")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", qemuArgs(vmlinuz, initrd, "null", "file:"+out)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("read the kernel's symbols: qemu: %v\n%s", err, b)
	}
	s, err := readSymbols(out)
	if err != nil {
		return nil, err
	}
	return s, os.Rename(out, path)
}
