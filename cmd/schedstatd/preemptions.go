package main

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/schedstatd/schedstatd/cgroupfs"
	"github.com/schedstatd/schedstatd/collector"
	"github.com/schedstatd/schedstatd/schedlat"
)

// preemptionsPath serves the busiest (victim, preemptor) pairs of the
// last window as JSON: pairs are quadratic in the cgroups, so they are
// not metrics.
const preemptionsPath = "/api/v1/preemptions"

// preemptionsJSON is the answer at preemptionsPath.
type preemptionsJSON struct {
	// Start and End bound the window (RFC 3339); Seconds is its length.
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
	// Total is every pair's preemptions in the window, Pairs the number
	// of pairs with any; Top the busiest, most first.
	Total uint64     `json:"total"`
	Pairs int        `json:"pairs"`
	Top   []pairJSON `json:"top"`
}

type pairJSON struct {
	Victim      cgroupJSON `json:"victim"`
	Preemptor   cgroupJSON `json:"preemptor"`
	Preemptions uint64     `json:"preemptions"`
	PerSecond   float64    `json:"per_second"`
}

// cgroupJSON names a cgroup: its path (the id label of its series) when
// the last pass listed it, and its container names where known. Kernel
// is set for kernel threads, which have no cgroup of their own.
type cgroupJSON struct {
	ID        string `json:"id,omitempty"`
	CgroupID  uint64 `json:"cgroup_id,omitempty"`
	Kernel    bool   `json:"kernel,omitempty"`
	Name      string `json:"name,omitempty"`
	Container string `json:"container,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// withPreemptions serves preemptionsPath beside next, behind the same
// TLS and authentication (exporter-toolkit wraps the whole handler).
func (s *sources) withPreemptions(next http.Handler, cfg *config, poller *collector.Poller) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", next)
	var labeler collector.Labeler
	if s.runtime != nil {
		labeler = s.runtime
	}
	mux.Handle(preemptionsPath, readOnly(limit(cfg.maxRequests, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.sched.Preemption() {
			http.Error(w, "preemption tracking is off: start the daemon with --collect.preemption (Linux 5.11 or later)", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(preemptionsAnswer(s.pairs.Window(), poller, labeler))
	}))))
	return mux
}

// preemptionsAnswer names the pairs of win by the cgroups of poller's
// last pass.
func preemptionsAnswer(win schedlat.PairWindow, poller *collector.Poller, labeler collector.Labeler) preemptionsJSON {
	paths := map[uint64]string{}
	for _, c := range poller.Last().Cgroups {
		paths[c.ID] = c.Path
	}
	name := func(id uint64) cgroupJSON {
		if id == 0 {
			return cgroupJSON{Kernel: true}
		}
		c := cgroupJSON{CgroupID: id, ID: paths[id]}
		if c.ID != "" {
			ident := cgroupfs.ParseIdentity(c.ID)
			c.ID, c.Name = cgroupfs.LabelValue(c.ID), cgroupfs.LabelValue(ident.Name)
			if labeler != nil {
				k := labeler.Labels(ident)
				c.Container, c.Pod, c.Namespace = k.Container, k.Pod, k.Namespace
			}
		}
		return c
	}
	out := preemptionsJSON{Start: win.Start, End: win.End, Total: win.Total, Pairs: win.Distinct, Top: []pairJSON{}}
	secs := win.End.Sub(win.Start).Seconds()
	out.Seconds = secs
	for _, p := range win.Pairs {
		j := pairJSON{Victim: name(p.Victim), Preemptor: name(p.Preemptor), Preemptions: p.Preemptions}
		if secs > 0 {
			j.PerSecond = float64(p.Preemptions) / secs
		}
		out.Top = append(out.Top, j)
	}
	return out
}
