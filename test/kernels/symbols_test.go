package kernels

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// symbols maps kernel text addresses to function names, from a kernel's
// System.map. The VMs boot with nokaslr, so the addresses a frozen
// guest's CPUs show are the map's.
type symbols struct {
	addrs []uint64
	names []string
}

// readSymbols reads the text symbols of a System.map.
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
		if len(fs) != 3 || (fs[1] != "t" && fs[1] != "T") {
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
	// System.map is sorted by address already; make sure.
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

var hexWord = regexp.MustCompile(`\b(?:RIP=)?(ffffffff[0-9a-f]{8})\b`)

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
