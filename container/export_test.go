package container

// SetClock replaces the table's monotonic clock, for tests of what it
// remembers for how long.
func SetClock(t *Table, clock func() int64) { t.clock = clock }

// SetTicks replaces the table's boot clock in clock ticks, the unit of
// task start times.
func SetTicks(t *Table, ticks func() uint64) { t.ticks = ticks }
