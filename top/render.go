package top

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// minLabelWidth is the narrowest the first column gets before columns of
// less interest are dropped to make room.
const minLabelWidth = 16

// column is one numeric column of the table.
type column struct {
	title string
	width int
	key   SortKey
	cell  func(Row) string
	// drop orders the columns that go when the terminal is narrow: the
	// highest first; 0 stays.
	drop int
}

var columns = []column{
	{"RUN/s", 8, ByRun, func(r Row) string { return rate(r, r.Run, 8) }, 0},
	{"WAIT/s", 8, ByWait, func(r Row) string { return rate(r, r.Wait, 8) }, 0},
	{"WAIT/RUN", 9, ByRatio, waitRun, 2},
	{"THR/s", 7, noSort, func(r Row) string { return optional(r, r.Throttled, r.HasThrottled, 7) }, 5},
	{"PSI/s", 7, noSort, func(r Row) string { return optional(r, r.Pressure, r.HasPressure, 7) }, 4},
	{"SLICES/s", 9, ByTimeslices, func(r Row) string {
		if !r.Known {
			return "-"
		}
		return strconv.FormatFloat(r.Timeslices, 'f', 0, 64)
	}, 3},
	{"TASKS", 6, ByTasks, func(r Row) string { return strconv.FormatFloat(r.Tasks, 'f', 0, 64) }, 1},
}

// Screen is everything one table shows.
type Screen struct {
	// Source names where the counters come from: a URL, or this node.
	Source string
	// Interval is the time between the two samples; Time the later one.
	Interval time.Duration
	Time     time.Time
	// View is resolved: never ViewAuto.
	View    View
	Sort    SortKey
	Reverse bool
	Filter  string
	// Node is the root cgroup's row, the whole node, if known.
	Node *Row
	// Rows are grouped, filtered and sorted; Total counts them before the
	// filter.
	Rows  []Row
	Total int
	// Pending is set while there is only one sample, so no rate yet.
	Pending bool
	// Scope names what a drilled-down screen shows (the row opened), for
	// the line of totals, which is the node's when it is empty.
	Scope string
	// Selected is the index in Rows of the row the cursor is on, -1 for
	// none.
	Selected int
}

// labelTitle is the first column's title in view v.
func labelTitle(v View) string {
	switch v {
	case ViewContainers:
		return "CONTAINER"
	case ViewPods:
		return "POD"
	case ViewProcesses:
		return "PID COMMAND"
	case ViewThreads:
		return "TID THREAD"
	}
	return "CGROUP"
}

// exitedMark follows the label of a process or thread that has exited
// since the sample before: it is shown this once.
const exitedMark = " (exited)"

// maxUnfittedLabel is the widest the first column gets when the width is
// not known (output to a pipe or a file): one long name does not pad
// every row. --output=json has every name whole.
const maxUnfittedLabel = 60

// Table returns the column header and one line per row, fitted to width
// terminal cells: the first column is as wide as the longest label, or
// cut to what is left (keeping its end, the distinctive part of a path,
// behind "..."); below 61 cells the timeslice, ratio and tasks columns go,
// in that order. No line is wider than width. A width of 0 or less is
// unknown: the first column is then at most maxUnfittedLabel wide. Labels
// are shown as Printable makes them.
func (s *Screen) Table(width int) []string {
	labels := make([]string, len(s.Rows))
	labelW := cells(labelTitle(s.View)) + 1
	for i, r := range s.Rows {
		labels[i] = Printable(r.Label)
		if r.Exited {
			labels[i] += exitedMark
		}
		labelW = max(labelW, cells(labels[i]))
	}
	task := s.View == ViewProcesses || s.View == ViewThreads
	cols := columns
	if hasLatency(s.Rows) {
		cols = append(cols[:len(cols):len(cols)], latencyColumns...)
	}
	if width > 0 {
		var room int
		cols, room = fit(width, cols)
		labelW = min(labelW, room)
	} else {
		labelW = min(labelW, maxUnfittedLabel)
	}
	lines := make([]string, 0, len(s.Rows)+1)
	var b strings.Builder
	title := labelTitle(s.View)
	if s.Sort == ByName {
		title += "*"
	}
	b.WriteString(pad(title, labelW))
	for _, c := range cols {
		t := c.title
		if c.key == s.Sort {
			t += "*"
		}
		fmt.Fprintf(&b, " %*s", c.width, t)
	}
	lines = append(lines, cut(b.String(), width))
	for i, r := range s.Rows {
		b.Reset()
		if task {
			// The id and the command's start are what tell a process;
			// the mark stays.
			b.WriteString(pad(headEllipsis(labels[i], labelW, s.Rows[i].Exited), labelW))
		} else {
			b.WriteString(pad(ellipsis(labels[i], labelW), labelW))
		}
		for _, c := range cols {
			fmt.Fprintf(&b, " %*s", c.width, c.cell(r))
		}
		lines = append(lines, cut(b.String(), width))
	}
	return lines
}

// fit chooses the columns that fit in width and the first column's width.
func fit(width int, all []column) ([]column, int) {
	cols := append([]column(nil), all...)
	for {
		used := 0
		for _, c := range cols {
			used += c.width + 1
		}
		if width-used >= minLabelWidth {
			return cols, width - used
		}
		worst := -1
		for i, c := range cols {
			if c.drop > 0 && (worst < 0 || c.drop > cols[worst].drop) {
				worst = i
			}
		}
		if worst < 0 {
			return cols, max(width-used, 4)
		}
		cols = append(cols[:worst], cols[worst+1:]...)
	}
}

// Header returns the lines above the table: what is shown, from where, and
// the node's totals.
func (s *Screen) Header(width int) []string {
	title := fmt.Sprintf("schedstatd top - %s  every %s  %s", s.Source, s.Interval.Round(time.Millisecond), s.Time.Format("15:04:05"))
	scope := "node"
	if s.Scope != "" {
		scope = Printable(s.Scope)
	}
	node := scope + "  collecting: rates after the second sample"
	if !s.Pending && s.Node != nil {
		n := s.Node
		node = fmt.Sprintf("%s  run %s/s  wait %s/s  wait/run %s  slices %s/s  tasks %.0f",
			scope, strings.TrimSpace(rate(*n, n.Run, 0)), strings.TrimSpace(rate(*n, n.Wait, 0)), ratio(n.Ratio()),
			strconv.FormatFloat(n.Timeslices, 'f', 0, 64), n.Tasks)
	}
	order := "largest first"
	if s.Sort == ByName {
		order = "A-Z"
	}
	if s.Reverse {
		order = "reversed"
	}
	state := fmt.Sprintf("view: %s  sort: %s (%s)  %d of %d rows", s.View, sortTitle(s.Sort), order, len(s.Rows), s.Total)
	if s.Filter != "" {
		state += fmt.Sprintf("  filter: %q", s.Filter)
	}
	return []string{cut(title, width), cut(node, width), cut(state, width)}
}

// sortTitle names the column sort key k sorts by.
func sortTitle(k SortKey) string {
	if k == ByName {
		return "name"
	}
	for _, c := range columns {
		if c.key == k {
			return strings.ToLower(c.title)
		}
	}
	return k.String()
}

// rate formats seconds per second in at most w characters (0: any).
func rate(r Row, v float64, w int) string {
	if !r.Known {
		return "-"
	}
	for _, prec := range []int{3, 2, 1, 0} {
		s := strconv.FormatFloat(v, 'f', prec, 64)
		if w <= 0 || len(s) <= w {
			return s
		}
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// noSort is the sort key of columns nothing sorts by.
const noSort SortKey = -1

// minTagged is the starvation ratio from which waitRun says what the wait
// is for: below it the row is not short of CPU.
const minTagged = 0.2

// waitRun formats the row's starvation ratio and, where it is high
// enough to matter, what dominates the wait: "L" when the row's own CPU
// limit can explain at least half of it (Row.LimitExplains), "C" for
// contention for the CPUs.
func waitRun(r Row) string {
	v := r.Ratio()
	s := ratio(v)
	switch {
	case s == "-" || v < minTagged:
		return s + "  "
	case r.LimitExplains():
		return s + " L"
	}
	return s + " C"
}

// optional formats a rate the row may lack: "-" without it.
func optional(r Row, v float64, has bool, w int) string {
	if !has {
		return "-"
	}
	return rate(r, v, w)
}

// ratio formats a starvation ratio; NaN (no rate, or no run time) is "-".
func ratio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// pad pads s with spaces to w terminal cells.
func pad(s string, w int) string {
	if n := cells(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

// ellipsis shortens s to at most w cells, keeping its end behind "...".
func ellipsis(s string, w int) string {
	if cells(s) <= w {
		return s
	}
	if w <= 3 {
		return tail(s, w)
	}
	return "..." + tail(s, w-3)
}

// headEllipsis shortens s to at most w cells, keeping its start before
// "...", and the exited mark at its end if marked.
func headEllipsis(s string, w int, marked bool) string {
	if cells(s) <= w {
		return s
	}
	mark := ""
	if marked {
		s, mark = strings.TrimSuffix(s, exitedMark), exitedMark
	}
	room := w - cells(mark) - 3
	if room <= 0 {
		return cut(s, w)
	}
	return cut(s, room) + "..." + mark
}

// tail returns the longest end of s that fits in w cells.
func tail(s string, w int) string {
	used, i := 0, len(s)
	for i > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		if used+runeCells(r) > w {
			break
		}
		used += runeCells(r)
		i -= n
	}
	return s[i:]
}

// cut cuts s to at most w cells; w of 0 or less keeps it whole.
func cut(s string, w int) string {
	if w <= 0 || cells(s) <= w {
		return s
	}
	used := 0
	for i, r := range s {
		if used+runeCells(r) > w {
			return s[:i]
		}
		used += runeCells(r)
	}
	return s
}
