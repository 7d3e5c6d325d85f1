package cgroupfs

import (
	"bytes"
)

// pressureFile is the v2 file that holds a cgroup's CPU pressure stall
// information. v1 hierarchies have none.
const pressureFile = "cpu.pressure"

// Pressure holds a cgroup's CPU pressure totals from cpu.pressure, in
// nanoseconds of wall time: Some is the time at least one of its runnable
// tasks waited for a CPU, Full the time all of its non-idle tasks did at
// once. A field is valid only when its Has flag is set; a cgroup without
// the file (v1 only, PSI off with psi=0, or cgroup.pressure set to 0) has
// no pressure series.
type Pressure struct {
	// SomeNanoseconds is the total= of the "some" line, times 1000.
	SomeNanoseconds uint64
	// FullNanoseconds is the total= of the "full" line, times 1000 (Linux
	// 5.13 and later show it for cpu; it is always 0 at the root).
	FullNanoseconds uint64
	// HasSome and HasFull report which lines were read.
	HasSome, HasFull bool
}

// ParsePressure parses b, the contents of a cpu.pressure file: lines
// "some" or "full" followed by space-separated key=value fields, of which
// total= (microseconds, an unsigned decimal) is read and the averages are
// skipped. Lines of other kinds are skipped. A some or full line without
// a valid total, or given twice, is an error wrapping ErrParse. It
// allocates nothing on success.
func ParsePressure(b []byte) (Pressure, error) {
	var p Pressure
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		kind, fields, _ := bytes.Cut(line, []byte{' '})
		var dst *uint64
		var has *bool
		switch string(kind) {
		case "some":
			dst, has = &p.SomeNanoseconds, &p.HasSome
		case "full":
			dst, has = &p.FullNanoseconds, &p.HasFull
		default:
			continue
		}
		total, ok := pressureTotal(fields)
		if !ok || *has || total > (1<<64-1)/1000 {
			return Pressure{}, parseError("cpu.pressure line", line)
		}
		*dst, *has = total*1000, true
	}
	return p, nil
}

// pressureTotal returns the value of the total= field among fields.
func pressureTotal(fields []byte) (uint64, bool) {
	for len(fields) > 0 {
		var f []byte
		f, fields, _ = bytes.Cut(fields, []byte{' '})
		if v, ok := bytes.CutPrefix(f, []byte("total=")); ok {
			return parseUint(v)
		}
	}
	return 0, false
}

// readPressure reads the cgroup's CPU pressure totals from its own
// cpu.pressure (relative to parentfd) or from the cgroup at the same path
// in the v2 hierarchy beside a walked v1 one. A missing file, or a
// missing twin, is no error: the cgroup has no pressure series.
func (w *walker) readPressure(parentfd int, n *node) (Pressure, error) {
	return readKernelFile(w, parentfd, n, pressureKind, &n.pressureFD, w.pressure, ParsePressure)
}
