package cgroupfs

import (
	"strings"
	"unicode/utf8"
)

// LabelValue returns s, a cgroup path or name, as a Prometheus label value:
// valid UTF-8, one value per path. A cgroup name is any bytes but '/' and
// NUL, while a label value must be UTF-8, so each byte of s that is not
// part of a valid UTF-8 sequence becomes the four characters \xNN (lower
// case hex), and a backslash becomes two, so no two paths give the same
// value and the original bytes can be read back. Every other character,
// control characters included, is kept: the exposition format escapes what
// it must, and a terminal shows them escaped (see top). A value with
// neither is returned as it is, without allocating. The daemon's id and
// name labels and top's rows all go through it.
func LabelValue(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			const hex = "0123456789abcdef"
			b.WriteString(`\x`)
			b.WriteByte(hex[s[i]>>4])
			b.WriteByte(hex[s[i]&0xf])
		case r == '\\':
			b.WriteString(`\\`)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
