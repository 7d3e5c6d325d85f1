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

	// editing is set while a filter is typed after "/"; edit holds it.
	editing bool
	edit    string
}

// Action is what a key asks of the live view.
type Action int

// Actions.
const (
	None Action = iota
	Redraw
	Quit
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
		st.View = st.View.Next()
	case keyEsc:
		if st.Filter == "" {
			return None
		}
		st.Filter = ""
	default:
		return None
	}
	return Redraw
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
	if n, ok := Root(rows); ok {
		s.Node = &n
	}
	grouped := Group(rows, s.View)
	s.Total = len(grouped)
	s.Rows = Filter(grouped, st.Filter)
	Sort(s.Rows, st.Sort, st.Reverse)
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
