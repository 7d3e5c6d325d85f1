package schedlat

import (
	"testing"
	"time"
)

func TestLoadReal(t *testing.T) {
	for _, o := range []Options{{Latency: true}, {Preemption: true}, {Latency: true, Preemption: true}, {Latency: true, Preemption: true, stateFromTask: true}} {
		_, s := openSource(t, o)
		time.Sleep(200 * time.Millisecond)
		c, err := s.Read()
		if err != nil {
			t.Fatal(err)
		}
		var tot Counts
		for _, v := range c {
			tot.Add(&v)
		}
		t.Logf("%+v: %d cgroups, total %+v lost %+v", o, len(c), tot, s.Lost())
		s.Close()
	}
}
