package cgroupfs

import (
	"bytes"
	"fmt"
)

// bandwidthFile is the file that holds a cgroup's CFS bandwidth counters,
// in the v1 cpu hierarchy and on v2 alike (where it also holds the CPU
// counter).
const bandwidthFile = "cpu.stat"

// Bandwidth holds a cgroup's CFS bandwidth counters from cpu.stat: how many
// enforcement periods its quota (v1 cpu.cfs_quota_us, v2 cpu.max) had, in
// how many it ran out, and for how long its run queues stayed throttled.
// They count the cgroup's own quota, not its descendants'. Times are in
// nanoseconds. A field is valid only when its Has flag is set: a cgroup
// without the file, or a kernel without the keys, has no such series.
type Bandwidth struct {
	// Periods is nr_periods: enforcement periods that had runnable tasks.
	Periods uint64
	// ThrottledPeriods is nr_throttled: periods in which the quota ran out.
	ThrottledPeriods uint64
	// ThrottledNanoseconds is throttled_time (v1, ns) or throttled_usec
	// (v2, us, times 1000): the time run queues of the cgroup spent
	// throttled, summed over CPUs.
	ThrottledNanoseconds uint64
	// HasThrottling reports whether the three fields above were read. v2
	// shows them only where the cpu controller is enabled.
	HasThrottling bool
	// Bursts is nr_bursts: periods in which the cgroup used its burst
	// allowance (cpu.cfs_burst_us, cpu.max.burst).
	Bursts uint64
	// BurstNanoseconds is burst_time (v1, ns) or burst_usec (v2): CPU time
	// used beyond the quota out of the burst allowance.
	BurstNanoseconds uint64
	// HasBursts reports whether Bursts and BurstNanoseconds were read
	// (Linux 5.14 and later).
	HasBursts bool
}

// The cpu.stat keys ParseBandwidth reads, as bits of what it found.
const (
	bwPeriods = 1 << iota
	bwThrottled
	bwThrottledTime
	bwBursts
	bwBurstTime

	bwThrottling = bwPeriods | bwThrottled | bwThrottledTime
	bwBursting   = bwBursts | bwBurstTime
)

// ParseBandwidth parses b, the contents of a v1 or v2 cpu.stat file:
// lines of a key, one space and an unsigned decimal. It reads nr_periods,
// nr_throttled and throttled_time (v1, ns) or throttled_usec (v2, us), and
// nr_bursts with burst_time or burst_usec; other keys (usage_usec and the
// like) are skipped unchecked. A file with none of a group's keys leaves
// that group's Has flag false; one with some but not all of them, or a
// value that is not a decimal of the keys it reads, is an error wrapping
// ErrParse. It allocates nothing on success.
func ParseBandwidth(b []byte) (Bandwidth, error) {
	var bw Bandwidth
	var found int
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		key, val, _ := bytes.Cut(line, []byte{' '})
		var dst *uint64
		var bit int
		scale := uint64(1)
		switch string(key) {
		case "nr_periods":
			dst, bit = &bw.Periods, bwPeriods
		case "nr_throttled":
			dst, bit = &bw.ThrottledPeriods, bwThrottled
		case "throttled_time":
			dst, bit = &bw.ThrottledNanoseconds, bwThrottledTime
		case "throttled_usec":
			dst, bit, scale = &bw.ThrottledNanoseconds, bwThrottledTime, 1000
		case "nr_bursts":
			dst, bit = &bw.Bursts, bwBursts
		case "burst_time":
			dst, bit = &bw.BurstNanoseconds, bwBurstTime
		case "burst_usec":
			dst, bit, scale = &bw.BurstNanoseconds, bwBurstTime, 1000
		default:
			continue
		}
		n, ok := parseUint(val)
		if !ok || n > (1<<64-1)/scale {
			return Bandwidth{}, parseError("cpu.stat line", line)
		}
		*dst = n * scale
		found |= bit
	}
	if f := found & bwThrottling; f != 0 && f != bwThrottling {
		return Bandwidth{}, fmt.Errorf("%w cpu.stat: nr_periods, nr_throttled and throttled time not all present", ErrParse)
	}
	if f := found & bwBursting; f != 0 && f != bwBursting {
		return Bandwidth{}, fmt.Errorf("%w cpu.stat: nr_bursts and burst time not both present", ErrParse)
	}
	bw.HasThrottling = found&bwThrottling != 0
	bw.HasBursts = found&bwBursting != 0
	return bw, nil
}

// readBandwidth reads the cgroup's CFS bandwidth counters from its own
// cpu.stat (relative to parentfd) or from the cgroup at the same path in
// the v1 cpu hierarchy. On v2 the counters come from the cpu.stat the
// usage counter was read from, in readUsage, and nothing is read here. A
// missing file, or a missing twin, is no error: the cgroup has no
// bandwidth series.
func (w *walker) readBandwidth(parentfd int, n *node) (Bandwidth, error) {
	return readKernelFile(w, parentfd, n, bandwidthKind, &n.bandwidthFD, w.bandwidth, ParseBandwidth)
}
