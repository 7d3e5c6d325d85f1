package collector

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"

	"github.com/schedstatd/schedstatd/container"
)

// writeContainerSeries writes the container series of the selected
// cgroups of s, whose labels are ls (in the same order), to w: in the
// Prometheus text format, or with om in OpenMetrics (without its closing
// "# EOF", which the caller writes after the other families). Each family
// is written whole, its samples in snapshot order. It allocates nothing:
// label sets are the cached ones, numbers are formatted into w's buffer.
func writeContainerSeries(w *bufio.Writer, s *container.Snapshot, ls []*cgroupLabels, om bool) error {
	for i := range families {
		f := &families[i]
		header := false
		for j := range s.Cgroups {
			l := ls[j]
			if !l.selected {
				continue
			}
			v, ok := f.value(&s.Cgroups[j])
			if !ok {
				continue
			}
			if !header {
				writeHeader(w, f, om)
				header = true
			}
			w.WriteString(f.name)
			w.WriteString(l.text)
			w.WriteByte(' ')
			room(w, maxValueLen)
			w.Write(appendValue(w.AvailableBuffer(), v, om))
			w.WriteByte('\n')
		}
	}
	_, err := w.Write(nil)
	return err
}

// writeHeader writes the HELP and TYPE lines of f. OpenMetrics names a
// counter family without its _total suffix, which only its samples carry.
func writeHeader(w *bufio.Writer, f *family, om bool) {
	name := f.name
	if om && f.counter {
		name = strings.TrimSuffix(name, "_total")
	}
	w.WriteString("# HELP ")
	w.WriteString(name)
	w.WriteByte(' ')
	room(w, 2*len(f.help))
	w.Write(appendHelp(w.AvailableBuffer(), f.help, om))
	w.WriteString("\n# TYPE ")
	w.WriteString(name)
	if f.counter {
		w.WriteString(" counter\n")
	} else {
		w.WriteString(" gauge\n")
	}
}

// maxValueLen is the most bytes appendValue writes.
const maxValueLen = 32

// room flushes w unless n bytes fit in its buffer, so that appending to
// its AvailableBuffer does not allocate.
func room(w *bufio.Writer, n int) {
	if w.Available() < n {
		w.Flush()
	}
}

// appendValue appends v as the format writes a sample value: the shortest
// decimal that reads back as v, and in OpenMetrics with ".0" after an
// integer, as expfmt writes them.
func appendValue(b []byte, v float64, om bool) []byte {
	start := len(b)
	b = strconv.AppendFloat(b, v, 'g', -1, 64)
	if om && !bytes.ContainsAny(b[start:], "e.") {
		b = append(b, '.', '0')
	}
	return b
}

// appendEscaped appends s as a quoted label value holds it: backslash,
// double quote and newline escaped.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '"':
			b = append(b, '\\', '"')
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendHelp appends a HELP text escaped as the format asks: backslash
// and newline, and in OpenMetrics the double quote too.
func appendHelp(b []byte, s string, om bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '"' && om:
			b = append(b, '\\', '"')
		default:
			b = append(b, c)
		}
	}
	return b
}
