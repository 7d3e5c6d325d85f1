package top

import (
	"errors"
	"strconv"
	"time"
	"unicode/utf8"
)

// State is what the user chose to see: the view, the sort and the filter.
// The live view changes it with keys; it is used from one goroutine.
type State struct {
	View    View
	Sort    SortKey
	Reverse bool
	Filter  string
	// Drill holds the steps drilled down from the cgroup, container or
	// pod rows, innermost last: empty there.
	Drill []Step
	// Selected is the Key of the row the cursor is on; empty (or a row
	// no longer there) is the row at the cursor's last place.
	Selected string

	// editing is set while a filter is typed after "/"; edit holds it.
	editing bool
	edit    string
	// cursor is the index of the selected row in the last screen.
	cursor int
}

// Step is one step of a drill-down: what it shows, and the filter and
// selection of the view it was opened from, given back by Back.
type Step struct {
	Target           Target
	filter, selected string
}

// Action is what a key asks of the live view.
type Action int

// Actions.
const (
	None Action = iota
	Redraw
	Quit
	// Open asks to open the selected row (State.Open), Back to go back a
	// step (State.Back); Up and Down to move the cursor (State.Move).
	Open
	Back
	Up
	Down
)

// sortKeys are the keys that choose a sort, as the help line lists them.
var sortKeys = map[byte]SortKey{
	'w': ByWait,
	'r': ByRun,
	'x': ByRatio,
	's': ByTimeslices,
	't': ByTasks,
	'n': ByName,
}

// HelpLine lists the keys of the live view.
const HelpLine = "w wait  r run  x wait/run  s slices  t tasks  n name  / filter  p view  q quit"

// DrillHelpLine lists the keys of a drilled-down view.
const DrillHelpLine = "Esc back  Enter threads  arrows move  w wait  r run  x wait/run  s slices  n name  / filter  q quit"

const (
	keyCtrlC     = 0x03
	keyBackspace = 0x08
	keyCtrlU     = 0x15
	keyEsc       = 0x1b
	keyDelete    = 0x7f
)

// Key applies one byte typed in the live view. A sort key sorts by its
// column, and pressed again reverses the order; "/" starts typing a
// filter, which Enter applies and Esc abandons; Esc otherwise clears the
// filter; "p" switches between containers, pods and cgroups; "q" and
// Ctrl-C quit.
func (st *State) Key(b byte) Action {
	if b == keyCtrlC {
		return Quit
	}
	if st.editing {
		switch {
		case b == '\r' || b == '\n':
			st.Filter, st.editing, st.edit = st.edit, false, ""
		case b == keyEsc:
			st.editing, st.edit = false, ""
		case b == keyDelete || b == keyBackspace:
			_, n := utf8.DecodeLastRuneInString(st.edit)
			st.edit = st.edit[:len(st.edit)-n]
		case b == keyCtrlU:
			st.edit = ""
		case b >= 0x20:
			// Bytes, not runes: a multi-byte character comes a byte
			// at a time.
			st.edit += string([]byte{b})
		default:
			return None
		}
		return Redraw
	}
	if k, ok := sortKeys[b]; ok {
		if st.Sort == k {
			st.Reverse = !st.Reverse
		} else {
			st.Sort, st.Reverse = k, false
		}
		return Redraw
	}
	switch b {
	case 'q', 'Q':
		return Quit
	case '/':
		st.editing, st.edit = true, st.Filter
	case 'p':
		if len(st.Drill) > 0 {
			return None
		}
		st.View = st.View.Next()
	case '\r', '\n':
		return Open
	case 'j':
		return Down
	case 'k':
		return Up
	case keyDelete, keyBackspace:
		if len(st.Drill) == 0 {
			return None
		}
		return Back
	case keyEsc:
		if len(st.Drill) > 0 {
			return Back
		}
		if st.Filter == "" {
			return None
		}
		st.Filter = ""
	default:
		return None
	}
	return Redraw
}

// Input applies what one read of the terminal gave: the arrow keys' escape
// sequences (ESC [ A, ESC O A, ...) move the cursor, every other byte is
// a Key. It returns the actions, in order, None left out.
func (st *State) Input(b []byte) []Action {
	var out []Action
	for i := 0; i < len(b); i++ {
		if b[i] == keyEsc && i+2 < len(b) && (b[i+1] == '[' || b[i+1] == 'O') {
			i += 2
			if st.editing {
				continue
			}
			switch b[i] {
			case 'A':
				out = append(out, Up)
			case 'B':
				out = append(out, Down)
			}
			continue
		}
		if a := st.Key(b[i]); a != None {
			out = append(out, a)
		}
	}
	return out
}

// Target returns what the innermost drill-down step shows, or nil at the
// cgroup, container and pod views.
func (st *State) Target() *Target {
	if len(st.Drill) == 0 {
		return nil
	}
	return &st.Drill[len(st.Drill)-1].Target
}

// Open drills down into the selected row of s, the screen shown: a
// cgroup, container or pod opens its processes, a process its threads. It
// reports whether there was something to open.
func (st *State) Open(s *Screen) bool {
	if s.Selected < 0 || s.Selected >= len(s.Rows) {
		return false
	}
	r := s.Rows[s.Selected]
	var t Target
	switch cur := st.Target(); {
	case cur == nil:
		t = Target{IDs: r.IDs, Label: r.Label}
	case !cur.Threads && r.TID == 0 && r.PID != 0:
		t = Target{IDs: cur.IDs, Label: processLabel(r.PID, r.Comm, r.Cmdline), Threads: true, PID: r.PID, Start: r.Start}
	default:
		return false
	}
	st.Drill = append(st.Drill, Step{Target: t, filter: st.Filter, selected: r.Key()})
	st.Filter, st.Selected, st.cursor = "", "", 0
	return true
}

// Back goes back one drill-down step, to the filter and row it was opened
// from. It reports whether there was a step to go back from.
func (st *State) Back() bool {
	if len(st.Drill) == 0 {
		return false
	}
	last := st.Drill[len(st.Drill)-1]
	st.Drill = st.Drill[:len(st.Drill)-1]
	st.Filter, st.Selected, st.cursor = last.filter, last.selected, 0
	return true
}

// Move moves the cursor d rows down (up if negative) on s, within its rows.
func (st *State) Move(s *Screen, d int) {
	if len(s.Rows) == 0 {
		return
	}
	i := min(max(s.Selected+d, 0), len(s.Rows)-1)
	st.Selected, st.cursor = s.Rows[i].Key(), i
}

// selectIn returns the index of the selected row among rows: the row of
// Selected, else the last place of the cursor, within rows; -1 for none.
func (st *State) selectIn(rows []Row) int {
	if len(rows) == 0 {
		return -1
	}
	for i, r := range rows {
		if st.Selected != "" && r.Key() == st.Selected {
			st.cursor = i
			return i
		}
	}
	st.cursor = min(max(st.cursor, 0), len(rows)-1)
	return st.cursor
}

// Bottom returns the live view's last line: the filter being typed, else
// the error of the last sample, else the help line.
func (st *State) Bottom(err error) string {
	switch {
	case st.editing:
		return "filter: " + st.edit + "_   (Enter apply, Esc cancel)"
	case errors.Is(err, ErrNotReady):
		return "waiting: " + err.Error()
	case err != nil:
		return "error: " + err.Error()
	case len(st.Drill) > 0:
		return DrillHelpLine
	}
	return HelpLine
}

// Screen returns the screen of the cgroup rows (from Rates) under st. An
// automatic view is resolved from the rows.
func (st *State) Screen(rows []Row, src string, interval time.Duration, at time.Time) *Screen {
	s := &Screen{
		Source:   src,
		Interval: interval,
		Time:     at,
		View:     st.View.Resolve(rows),
		Sort:     st.Sort,
		Reverse:  st.Reverse,
		Filter:   st.Filter,
	}
	if t := st.Target(); t != nil {
		// rows are the target's processes or threads (TaskRows).
		s.View, s.Scope = t.View(), t.Label
		n := total(t.Label, rows)
		s.Node, s.Total = &n, len(rows)
		s.Rows = Filter(rows, st.Filter)
		Sort(s.Rows, st.Sort, st.Reverse)
		s.Selected = st.selectIn(s.Rows)
		return s
	}
	if n, ok := Root(rows); ok {
		s.Node = &n
	}
	grouped := Group(rows, s.View)
	s.Total = len(grouped)
	s.Rows = Filter(grouped, st.Filter)
	Sort(s.Rows, st.Sort, st.Reverse)
	s.Selected = st.selectIn(s.Rows)
	return s
}

// Frame returns the lines of a live screen of width by height, and the
// index of the column header among them. It shows as many rows as fit,
// says how many more there are, and ends with bottom on the last line.
func (s *Screen) Frame(width, height int, bottom string) ([]string, int) {
	lines := s.Header(width)
	if height < len(lines)+3 {
		// Too short for the header: rows come first.
		lines = nil
	}
	header := len(lines)
	table := s.Table(width)
	room := height - len(lines) - 1
	if len(table) > room {
		more := len(table) - room + 1
		table = append(table[:max(room-1, 0)], cut(ellipsisMore(more), width))
	}
	lines = append(lines, table...)
	for height > 0 && len(lines) < height-1 {
		lines = append(lines, "")
	}
	lines = append(lines, cut(bottom, width))
	if height > 0 && len(lines) > height {
		header -= len(lines) - height
		lines = lines[len(lines)-height:]
	}
	return lines, header
}

func ellipsisMore(n int) string {
	if n == 1 {
		return "... 1 more row (/ to filter)"
	}
	return "... " + strconv.Itoa(n) + " more rows (/ to filter)"
}
