package schedlat

import (
	"math"
	"testing"
)

// TestThresholds checks that each bucket's threshold in whole nanoseconds
// is the largest wait at or below its native bound, and that bucketOf puts
// waits on either side of it in neighbouring buckets.
func TestThresholds(t *testing.T) {
	for b, th := range thresholds {
		bound := math.Exp2(float64(NativeIndex(b))/2) * 1e9 // ns
		if b == 0 {
			bound = ZeroThreshold * 1e9
		}
		if float64(th) > bound || float64(th+1) <= bound {
			t.Errorf("bucket %d: threshold %d ns for the bound %.3f ns", b, th, bound)
		}
		if got := bucketOf(th); got != b {
			t.Errorf("bucketOf(%d) = %d, want %d", th, got, b)
		}
		if got := bucketOf(th + 1); got != b+1 {
			t.Errorf("bucketOf(%d) = %d, want %d", th+1, got, b+1)
		}
	}
	if got := bucketOf(math.MaxUint64); got != Buckets-1 {
		t.Errorf("a wait beyond the last bound is in bucket %d, want %d", got, Buckets-1)
	}
}

// TestClassic checks that the classic buckets are cumulative over the
// native ones up to each bound.
func TestClassic(t *testing.T) {
	var c Counts
	for b := range c.Buckets {
		c.Buckets[b] = 1
	}
	for i, n := range Classic(&c) {
		// Bound 2^e s is native index 2e, bucket 2e+40: that many
		// buckets and the zero bucket lie at or below it.
		e := -20 + i
		if want := uint64(2*e + 40 + 1); n != want {
			t.Errorf("le=2^%d: %d, want %d", e, n, want)
		}
	}
}
