package schedlat

import "math"

// The histogram's buckets are those of a Prometheus native histogram of
// schema 1 (each bucket's bounds a factor of sqrt(2) apart; bucket index i
// holds waits in (2^((i-1)/2), 2^(i/2)] seconds), so the program's counts
// are served as they are, with no rebinning.
const (
	// Schema is the native histogram schema of the buckets.
	Schema = 1
	// ZeroThreshold is the upper bound, in seconds, of the zero bucket:
	// waits of at most 2^-20 s (about 954 ns).
	ZeroThreshold = 1.0 / (1 << 20)
	// firstIndex and lastIndex are the native indices of the first and
	// last bucket above the zero bucket: (2^-20, 2^-19.5] s up to
	// (2^5.5, 2^6] s. A wait above 64 s is counted in the last bucket.
	firstIndex = -39
	lastIndex  = 12
	// Buckets is the number of bucket counters: the zero bucket, then one
	// per native index from firstIndex to lastIndex.
	Buckets = 1 + lastIndex - firstIndex + 1
)

// thresholds are the buckets' upper bounds in whole nanoseconds, but for
// the last bucket's: a wait of w ns belongs to the first bucket b with
// w <= thresholds[b], or to the last if none. Since a bound in seconds is
// rarely a whole number of nanoseconds, thresholds[b] is its floor: w <=
// floor(x) exactly when w <= x for a whole w.
var thresholds = func() [Buckets - 1]uint64 {
	var t [Buckets - 1]uint64
	for b := range t {
		t[b] = uint64(math.Floor(math.Exp2(float64(firstIndex-1+b)/2) * 1e9))
	}
	return t
}()

// bucketOf returns the bucket of a wait of w ns, as the program finds it.
func bucketOf(w uint64) int {
	lo, hi := 0, len(thresholds)
	for lo < hi {
		mid := (lo + hi) / 2
		if w > thresholds[mid] {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// NativeIndex returns the native histogram index of bucket b > 0 (bucket
// 0 is the zero bucket).
func NativeIndex(b int) int { return firstIndex - 1 + b }

// ClassicBounds are the upper bounds, in seconds, of the classic buckets
// served beside the native ones for scrapers without native histogram
// support: powers of two from 2^-20 s (954 ns) to 4 s, each the bound of a
// native bucket, so both views count the same waits. +Inf is implied.
var ClassicBounds = func() []float64 {
	var b []float64
	for e := -20; e <= 2; e++ {
		b = append(b, math.Exp2(float64(e)))
	}
	return b
}()

// classicLast returns, for each classic bound, the last bucket at or
// below it.
var classicLast = func() []int {
	var last []int
	for e := -20; e <= 2; e++ {
		// Native index 2e has upper bound 2^e; bucket 0 is the zero
		// bucket with bound 2^-20.
		last = append(last, 2*e-(firstIndex-1))
	}
	return last
}()

// Classic returns c's cumulative counts at ClassicBounds.
func Classic(c *Counts) []uint64 {
	out := make([]uint64, len(ClassicBounds))
	var n uint64
	b := 0
	for i, last := range classicLast {
		for ; b <= last; b++ {
			n += c.Buckets[b]
		}
		out[i] = n
	}
	return out
}
