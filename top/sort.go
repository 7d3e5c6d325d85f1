package top

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// SortKey is the column rows are sorted by.
type SortKey int

// Sort keys. Numbers sort largest first, names A to Z.
const (
	ByWait SortKey = iota
	ByRun
	ByRatio
	ByTimeslices
	ByTasks
	ByName
)

var sortNames = []string{"wait", "run", "ratio", "slices", "tasks", "name"}

func (k SortKey) String() string {
	if k < 0 || int(k) >= len(sortNames) {
		return fmt.Sprintf("SortKey(%d)", int(k))
	}
	return sortNames[k]
}

// ParseSortKey returns the sort key named s, as String names it.
func ParseSortKey(s string) (SortKey, error) {
	if i := slices.Index(sortNames, s); i >= 0 {
		return SortKey(i), nil
	}
	return 0, fmt.Errorf("unknown sort key %q (want one of %s)", s, strings.Join(sortNames, ", "))
}

// SortNames returns the names ParseSortKey takes.
func SortNames() []string { return slices.Clone(sortNames) }

// value returns the number r is sorted by under k; NaN sorts last.
func (k SortKey) value(r Row) float64 {
	if !r.Known && k != ByTasks {
		return math.NaN()
	}
	switch k {
	case ByWait:
		return r.Wait
	case ByRun:
		return r.Run
	case ByRatio:
		return r.Ratio()
	case ByTimeslices:
		return r.Timeslices
	case ByTasks:
		return r.Tasks
	}
	return 0
}

// Sort sorts rows by k, largest first (names A to Z), or the other way
// round when reverse is set. Rows without a value (no rate yet, no ratio
// without run time) come last either way; ties go by label.
func Sort(rows []Row, k SortKey, reverse bool) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		var c int
		if k == ByName {
			c = cmp.Or(strings.Compare(sortName(a), sortName(b)), strings.Compare(a.Label, b.Label))
		} else {
			va, vb := k.value(a), k.value(b)
			switch na, nb := math.IsNaN(va), math.IsNaN(vb); {
			case na && nb:
			case na:
				return 1
			case nb:
				return -1
			default:
				c = cmp.Compare(vb, va)
			}
		}
		if reverse {
			c = -c
		}
		return cmp.Or(c, strings.Compare(a.Label, b.Label))
	})
}

// sortName is what sorting by name compares: a process's or thread's
// name, else the label.
func sortName(r Row) string {
	if r.Comm != "" {
		return r.Comm
	}
	return r.Label
}

// Filter returns the rows whose label, cgroup ids or Kubernetes names
// contain sub, ignoring case. An empty sub keeps every row.
func Filter(rows []Row, sub string) []Row {
	if sub == "" {
		return rows
	}
	sub = strings.ToLower(sub)
	out := rows[:0:0]
	for _, r := range rows {
		if matches(r, sub) {
			out = append(out, r)
		}
	}
	return out
}

func matches(r Row, sub string) bool {
	for _, s := range append([]string{r.Label, r.Container, r.Pod, r.Namespace, r.Comm}, r.IDs...) {
		if strings.Contains(strings.ToLower(s), sub) {
			return true
		}
	}
	return false
}
