package top

import (
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/width"
)

// Printable returns label, a label value (cgroupfs.LabelValue has made a
// cgroup name valid UTF-8, with a backslash doubled), as a terminal may
// show it: every character that is not printable (control bytes such as
// ESC, tab and CR, format characters such as bidirectional overrides) is
// written as an escape, \t, \r, \n, \x1b for other ASCII, \u0085 and
// \U000e0001 above, so nothing reaches the terminal but text, and two
// labels never look alike. Printable text is returned as it is.
func Printable(label string) string {
	i := strings.IndexFunc(label, notPrintable)
	if i < 0 {
		return label
	}
	var b strings.Builder
	b.WriteString(label[:i])
	for _, r := range label[i:] {
		if !notPrintable(r) {
			b.WriteRune(r)
			continue
		}
		switch {
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x80:
			b.WriteString(`\x`)
			b.WriteString(hex(r, 2))
		case r <= 0xffff:
			b.WriteString(`\u`)
			b.WriteString(hex(r, 4))
		default:
			b.WriteString(`\U`)
			b.WriteString(hex(r, 8))
		}
	}
	return b.String()
}

// notPrintable reports whether r must not go to a terminal as it is.
func notPrintable(r rune) bool { return !unicode.IsPrint(r) }

// hex formats r in n lower-case hex digits.
func hex(r rune, n int) string {
	s := strconv.FormatInt(int64(r), 16)
	return strings.Repeat("0", max(0, n-len(s))) + s
}

// cells returns how many terminal cells s takes.
func cells(s string) int {
	n := 0
	for _, r := range s {
		n += runeCells(r)
	}
	return n
}

// runeCells returns how many terminal cells r takes: two for East Asian
// wide and fullwidth characters, none for combining marks, one else.
func runeCells(r rune) int {
	if r < 0x300 {
		return 1
	}
	if unicode.In(r, unicode.Mn, unicode.Me) {
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}
