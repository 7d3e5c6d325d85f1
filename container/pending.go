package container

// Exit records of cgroups that no pass has listed yet (made since the last
// pass, such as a new container whose first threads already exited) wait
// for the next pass instead of going to an ancestor at once.
const (
	// maxPending bounds the records waiting; past it a record goes to the
	// nearest listed ancestor at once.
	maxPending = 16384
	// pendingTTL is how long, in nanoseconds, a record waits for a pass
	// that can tell where it belongs (one whose walk below the record's
	// nearest listed ancestor was complete).
	pendingTTL = int64(30e9)
)

type pendingExit struct {
	x  Exit
	at int64 // clock when it arrived
}

// pendingExits are the records waiting for a pass.
type pendingExits struct {
	list []pendingExit
}

// hold keeps x for the next pass, or credits it to the nearest ancestor the
// last pass listed when too many wait already.
func (p *pendingExits) hold(t *Table, x Exit) {
	if len(p.list) >= maxPending {
		t.creditAncestor(x, true)
		return
	}
	p.list = append(p.list, pendingExit{x: x, at: t.clock()})
}

// resolve runs after a pass matched its listing: each waiting record whose
// cgroup the pass lists is credited there. A record whose nearest listed
// ancestor had its children listed in full names a cgroup that is gone:
// it goes to that ancestor. The rest wait on, up to pendingTTL.
func (p *pendingExits) resolve(t *Table) {
	if len(p.list) == 0 {
		return
	}
	now := t.clock()
	keep := p.list[:0]
	for _, w := range p.list {
		if cg := t.cgroups.byID[w.x.Cgroup]; cg != nil && cg.seen == t.pass {
			cg.own = cg.own.Add(w.x.Final)
			continue
		}
		anc := t.cgroups.listedAncestor(&w.x, t.pass)
		unsure := anc == nil && t.cgroups.unread > 0 || anc != nil && anc.subtreeUnread
		if unsure && now-w.at < pendingTTL {
			keep = append(keep, w)
			continue
		}
		t.creditAncestor(w.x, false)
	}
	clear(p.list[len(keep):])
	p.list = keep
	if cap(p.list) > 4*len(p.list)+minRebuild {
		p.list = append([]pendingExit(nil), p.list...)
	}
}

// creditAncestor credits x whole to the nearest ancestor of its cgroup that
// the last pass listed, or to the root, and counts it unattributed.
func (t *Table) creditAncestor(x Exit, overflow bool) {
	cg := t.cgroups.listedAncestor(&x, t.pass)
	if cg == nil {
		cg = t.cgroups.order[0]
	}
	cg.own = cg.own.Add(x.Final)
	t.counters.UnattributedExits++
	if overflow {
		t.counters.PendingOverflows++
	}
}

// listedAncestor returns the nearest of x's ancestors that this pass
// listed or kept, or nil.
func (s *cgroupSet) listedAncestor(x *Exit, pass uint64) *cgroupState {
	for _, id := range x.Ancestors {
		if id == 0 {
			break
		}
		if cg := s.byID[id]; cg != nil && cg.seen == pass {
			return cg
		}
	}
	return nil
}
