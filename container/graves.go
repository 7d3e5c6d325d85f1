package container

import "github.com/schedstatd/schedstatd/schedstat"

// Retired tasks are remembered until the exit source has shown that their
// records, if the kernel wrote any, have been delivered: a task is retired
// when its handle reports it gone, and a thread is reaped before its final
// switch away writes the record, so the record can come after the pass.
const (
	// exitMargin is how long after a task was retired its exit record may
	// still be written, in nanoseconds: the rest of the kernel's exit path
	// on a starved CPU.
	exitMargin = int64(10e9)
	// maxGraves bounds the retired tasks remembered; past it, the oldest
	// generation is forgotten and counted (Counters.GravesEvicted).
	maxGraves = 1 << 17
)

// grave is what was counted for a retired task. restored is set for a
// task of a restored table's State that was gone at the restore: it
// exited while no daemon ran, or before the save, so no record of it is
// due. filled is set for such a task whose run since last was filled
// from its cgroup's counter (restore.go).
type grave struct {
	last     schedstat.Stat
	cg       *cgroupState
	restored bool
	filled   bool
}

// generation holds the tasks retired within exitMargin of its first.
type generation struct {
	graves     map[identity]grave
	begin, end int64 // clock at the first and the last burial
}

// graveyard remembers retired tasks in generations of exitMargin each. A
// generation is forgotten once the exit source has delivered the records
// of everything written up to exitMargin after the generation's last
// burial: any record for its tasks would have come. Each generation's map
// is made anew, so a burst of exits gives its memory back.
type graveyard struct {
	enabled bool
	// delay is how much later than exitMargin the exit source may write
	// a record (ExitRecordDelay).
	delay   int64
	gens    []generation // oldest first; the last is the current one
	count   int
	upTo    int64 // records delivered up to this clock
	evicted uint64
	// unrecorded counts retired tasks forgotten once every record that
	// could have been theirs was delivered, none being: the ring had no
	// room for it, or the kernel sent none. Their time after the last pass
	// that read them is not counted.
	unrecorded uint64
}

func (g *graveyard) bury(tid int32, e *entry, now int64) {
	g.put(tid, e.start, grave{last: e.last, cg: e.cg}, now)
}

// put remembers gr for the task tid that started at start.
func (g *graveyard) put(tid int32, start uint64, gr grave, now int64) {
	if !g.enabled {
		return
	}
	if len(g.gens) == 0 || now-g.gens[len(g.gens)-1].begin >= g.margin() {
		g.gens = append(g.gens, generation{graves: make(map[identity]grave), begin: now, end: now})
	}
	cur := &g.gens[len(g.gens)-1]
	cur.graves[identity{tid, start}] = gr
	cur.end = max(cur.end, now)
	g.count++
}

// margin is how long after a retirement a record may still be written.
func (g *graveyard) margin() int64 { return exitMargin + g.delay }

func (g *graveyard) dig(tid int32, start uint64) (grave, bool) {
	id := identity{tid, start}
	for i := len(g.gens) - 1; i >= 0; i-- {
		if gr, ok := g.gens[i].graves[id]; ok {
			delete(g.gens[i].graves, id)
			g.count--
			return gr, true
		}
	}
	return grave{}, false
}

func (g *graveyard) delivered(upTo int64) { g.upTo = max(g.upTo, upTo) }

// expire forgets the generations whose records have all been delivered,
// and the oldest ones while more than maxGraves are remembered.
func (g *graveyard) expire() {
	drop := 0
	for drop < len(g.gens) && (g.gens[drop].end+g.margin() <= g.upTo || g.count > maxGraves) {
		n := len(g.gens[drop].graves)
		if g.gens[drop].end+g.margin() > g.upTo {
			g.evicted += uint64(n)
		} else {
			for _, gr := range g.gens[drop].graves {
				if !gr.restored {
					g.unrecorded++
				}
			}
		}
		g.count -= n
		drop++
	}
	if drop > 0 {
		n := copy(g.gens, g.gens[drop:])
		clear(g.gens[n:])
		g.gens = g.gens[:n]
	}
}

// len returns the number of retired tasks remembered.
func (g *graveyard) len() int { return g.count }
