package container

// SetClock replaces the table's monotonic clock, for tests of what it
// remembers for how long.
func SetClock(t *Table, clock func() int64) { t.clock = clock }
