package container

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
