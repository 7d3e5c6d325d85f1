package taskiter_test

import (
	"testing"

	"github.com/schedstatd/schedstatd/internal/testkit/testproc"

	"github.com/schedstatd/schedstatd/schedstat"
)

// PID reuse with the iterator source, in a new PID namespace, is shown by
// container's TestRealPIDReuse, which runs over both task sources.

// TestHandleGoneReal reads a task through a handle after the task is
// reaped: the read is an error for which schedstat.IsGone is true, and the
// handle keeps failing after later reads.
func TestHandleGoneReal(t *testing.T) {
	_, s := open(t, "")
	c := testproc.Spin(t)
	if err := s.Read(); err != nil {
		t.Fatal(err)
	}
	h, err := s.Opener().Open(int32(c.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Read(); err != nil {
		t.Fatalf("live task: %v", err)
	}
	c.Process.Kill()
	c.Wait()
	for range 2 {
		if err := s.Read(); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Read(); !schedstat.IsGone(err) {
			t.Fatalf("reaped task: err %v, want one IsGone reports", err)
		}
	}
	if _, err := s.Opener().Open(int32(c.Process.Pid)); !schedstat.IsGone(err) {
		t.Errorf("open of a reaped task: err %v, want one IsGone reports", err)
	}
}
