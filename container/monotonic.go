package container

import "github.com/schedstatd/schedstatd/cgroupfs"

// monotonic makes a kernel counter that can start over (a cgroup made
// again under the same name, a counter reset by a write) into one that
// never falls: a fall is taken as a restart from zero, and what was shown
// before it is carried in base.
type monotonic struct {
	base, last uint64
	has        bool
}

// observe takes a new reading of the kernel counter.
func (m *monotonic) observe(v uint64) {
	if m.has && v < m.last {
		m.base += m.last
	}
	m.last, m.has = v, true
}

// value returns the counter as exported: base plus the last reading.
func (m *monotonic) value() uint64 { return m.base + m.last }

// kernelCounters are a cgroup's own kernel counters, each made monotonic;
// a counter the last reading lacked keeps its last value.
type kernelCounters struct {
	usage                                monotonic
	periods, throttledPeriods, throttled monotonic
	bursts, burst                        monotonic
	pressureSome, pressureFull           monotonic
}

// all lists the counters, for what is done to each alike.
func (k *kernelCounters) all() [8]*monotonic {
	return [8]*monotonic{&k.usage, &k.periods, &k.throttledPeriods, &k.throttled, &k.bursts, &k.burst, &k.pressureSome, &k.pressureFull}
}

// observe takes the readings of c that are there.
func (k *kernelCounters) observe(c *cgroupfs.Cgroup) {
	if c.HasUsage {
		k.usage.observe(c.UsageNanoseconds)
	}
	if b := &c.Bandwidth; b.HasThrottling {
		k.periods.observe(b.Periods)
		k.throttledPeriods.observe(b.ThrottledPeriods)
		k.throttled.observe(b.ThrottledNanoseconds)
	}
	if b := &c.Bandwidth; b.HasBursts {
		k.bursts.observe(b.Bursts)
		k.burst.observe(b.BurstNanoseconds)
	}
	if p := &c.Pressure; p.HasSome {
		k.pressureSome.observe(p.SomeNanoseconds)
	}
	if p := &c.Pressure; p.HasFull {
		k.pressureFull.observe(p.FullNanoseconds)
	}
}

// inherit starts every counter where a predecessor's showed it.
func (k *kernelCounters) inherit(prev *kernelCounters) {
	mine, theirs := k.all(), prev.all()
	for i, m := range mine {
		m.base += theirs[i].value()
	}
}

// bandwidth returns the CFS bandwidth counters as exported.
func (k *kernelCounters) bandwidth() cgroupfs.Bandwidth {
	return cgroupfs.Bandwidth{
		Periods:              k.periods.value(),
		ThrottledPeriods:     k.throttledPeriods.value(),
		ThrottledNanoseconds: k.throttled.value(),
		HasThrottling:        k.periods.has,
		Bursts:               k.bursts.value(),
		BurstNanoseconds:     k.burst.value(),
		HasBursts:            k.bursts.has,
	}
}

// pressure returns the CPU pressure counters as exported.
func (k *kernelCounters) pressure() cgroupfs.Pressure {
	return cgroupfs.Pressure{
		SomeNanoseconds: k.pressureSome.value(),
		FullNanoseconds: k.pressureFull.value(),
		HasSome:         k.pressureSome.has,
		HasFull:         k.pressureFull.has,
	}
}
