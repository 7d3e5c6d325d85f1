package top

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

const longPath = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod6c2a7f1e_3b4d_4e5f_8a9b_0c1d2e3f4a5b.slice/cri-containerd-a172cedcae47474b615c54d510a5d84a8dea3032e958587430b413538be3f333.scope"

func screen(rows ...Row) *Screen {
	node := Row{Label: "/", IDs: []string{"/"}, Known: true, Run: 1.9, Wait: 4.25, Timeslices: 2000, Tasks: 170}
	return &Screen{
		Source: "http://127.0.0.1:10271/metrics", Interval: 2 * time.Second, Time: t0,
		View: ViewCgroups, Sort: ByWait, Node: &node, Rows: rows, Total: len(rows),
	}
}

func TestTableAt80Columns(t *testing.T) {
	s := screen(
		Row{Label: "/starved", IDs: []string{"/starved"}, Known: true, Run: 0.571, Wait: 2.857, Timeslices: 120, Tasks: 6, HasPressure: true, Pressure: 0.97},
		Row{Label: "/limited", IDs: []string{"/limited"}, Known: true, Run: 0.2, Wait: 0.8, Timeslices: 10, Tasks: 1, HasThrottled: true, Throttled: 0.6, HasPressure: true, Pressure: 0.8},
		Row{Label: longPath, IDs: []string{longPath}, Known: true, Run: 1.25, Wait: 0.125, Timeslices: 3000, Tasks: 12, HasThrottled: true},
		Row{Label: "/new", IDs: []string{"/new"}, Tasks: 1},
	)
	want := []string{
		"CGROUP                 RUN/s  WAIT/s*  WAIT/RUN   THR/s   PSI/s  SLICES/s  TASKS",
		"/starved               0.571    2.857    5.00 C       -   0.970       120      6",
		"/limited               0.200    0.800    4.00 L   0.600   0.800        10      1",
		"...538be3f333.scope    1.250    0.125    0.10     0.000       -      3000     12",
		"/new                       -        -       -         -       -         -      1",
	}
	got := s.Table(80)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Table(80) (-want +got):\n%s", diff)
	}
}

func TestTableFitsEveryWidth(t *testing.T) {
	s := screen(
		Row{Label: longPath, IDs: []string{longPath}, Known: true, Run: 123.456, Wait: 9876.5, Timeslices: 123456789, Tasks: 100000},
		Row{Label: "/a", IDs: []string{"/a"}, Known: true, Run: 1, Wait: 1, Timeslices: 1, Tasks: 1},
	)
	for _, width := range []int{10, 20, 34, 40, 50, 59, 60, 61, 79, 80, 81, 100, 120, 200, 280, 400} {
		lines := append(s.Header(width), s.Table(width)...)
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > width {
				t.Errorf("width %d: line of %d: %q", width, n, l)
			}
		}
		header := s.Table(width)[0]
		for _, col := range []string{"RUN/s", "WAIT/s*"} {
			if width >= 40 && !strings.Contains(header, col) {
				t.Errorf("width %d: no %s column: %q", width, col, header)
			}
		}
		all := width >= 80
		for _, col := range []string{"WAIT/RUN", "SLICES/s", "TASKS"} {
			if all && !strings.Contains(header, col) {
				t.Errorf("width %d: no %s column: %q", width, col, header)
			}
		}
		row := s.Table(width)[1]
		if width >= 80 && width < 200 && !strings.Contains(row, "...") {
			t.Errorf("width %d: the long path is not shortened: %q", width, row)
		}
		if width >= 40 && !strings.Contains(row, "scope") {
			t.Errorf("width %d: the end of the path is lost: %q", width, row)
		}
	}
	// The narrowest widths give up the columns of least interest first.
	if h := s.Table(60)[0]; strings.Contains(h, "SLICES/s") || !strings.Contains(h, "TASKS") {
		t.Errorf("width 60: %q", h)
	}
	if h := s.Table(50)[0]; strings.Contains(h, "WAIT/RUN") || strings.Contains(h, "SLICES/s") {
		t.Errorf("width 50: %q", h)
	}
	if h := s.Table(280)[1]; !strings.Contains(h, longPath) {
		t.Errorf("width 280 cuts the path: %q", h)
	}
}

// TestTableWithoutWidthCapsLabels: without a terminal (--once to a pipe)
// one long name neither pads every row to its width nor is lost whole.
func TestTableWithoutWidthCapsLabels(t *testing.T) {
	long := "/" + strings.Repeat("x", 299)
	s := screen(Row{Label: long, IDs: []string{long}, Known: true, Run: 1, Wait: 2, Tasks: 3},
		Row{Label: "/a", IDs: []string{"/a"}, Known: true, Run: 1, Wait: 2, Tasks: 3})
	lines := s.Table(0)
	// The name column: at most maxUnfittedLabel cells, then the first
	// numeric column (8 cells after a space).
	if i := strings.Index(lines[0], "RUN/s"); i+len("RUN/s") > maxUnfittedLabel+1+8 {
		t.Errorf("the name column is %d cells wide: %q", i, lines[0])
	}
	if !strings.HasPrefix(lines[1], "...xxx") || !strings.HasPrefix(lines[2], "/a ") {
		t.Errorf("Table(0) rows:\n%s", strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		if cells(l) != cells(lines[0]) {
			t.Errorf("columns do not line up:\n%s\n%s", lines[0], l)
		}
	}
	// A short label is not padded beyond its own width.
	if lines := screen(Row{Label: "/a", IDs: []string{"/a"}}).Table(0); !strings.HasPrefix(lines[1], "/a       ") || strings.HasPrefix(lines[1], "/a"+strings.Repeat(" ", 20)) {
		t.Errorf("short row: %q", lines[1])
	}
}

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/plain/path", "/plain/path"},
		{"/tab\there", `/tab\there`},
		{"/cr\rhidden", `/cr\rhidden`},
		{"/esc\x1b[31mred\x1b[0m", `/esc\x1b[31mred\x1b[0m`},
		{"/del\x7f", `/del\x7f`},
		{"/c1\u0085", `/c1\u0085`},
		{"/bidi\u202eevil", `/bidi\u202eevil`},
		{`/bad\xffutf8`, `/bad\xffutf8`}, // LabelValue's escape is text already
		{"/日本語", "/日本語"},
	} {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCells(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"abc", 3}, {"日本語", 6}, {"ｱ", 1}, {"Ａ", 2}, {"e\u0301", 1}, {"😀", 2}, {"ünï", 3},
	} {
		if got := cells(tc.s); got != tc.want {
			t.Errorf("cells(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

// TestTableWideAndControlLabels: rows line up in cells whatever the
// characters, and no control byte is left in a line.
func TestTableWideAndControlLabels(t *testing.T) {
	s := screen(
		Row{Label: "/日本語のコンテナ", IDs: []string{"/a"}, Known: true, Run: 1, Wait: 2, Tasks: 3},
		Row{Label: "/tab\there\r\x1b[31mred", IDs: []string{"/b"}, Known: true, Run: 1, Wait: 1, Tasks: 1},
		Row{Label: "/plain", IDs: []string{"/c"}, Known: true, Run: 1, Wait: 0.5, Tasks: 1},
	)
	for _, width := range []int{0, 30, 40, 61, 80} {
		lines := s.Table(width)
		for _, l := range lines {
			if strings.IndexFunc(l, notPrintable) >= 0 {
				t.Errorf("width %d: control character in %q", width, l)
			}
			if width > 0 && cells(l) > width {
				t.Errorf("width %d: line of %d cells: %q", width, cells(l), l)
			}
			// Every line ends in the TASKS column, so all are as wide.
			if cells(l) != cells(lines[0]) {
				t.Errorf("width %d: %q is %d cells, the header %d", width, l, cells(l), cells(lines[0]))
			}
		}
	}
	if row := s.Table(160)[2]; !strings.HasPrefix(row, `/tab\there\r\x1b[31mred `) {
		t.Errorf("row: %q", row)
	}
	// Cut to fewer cells than the label: the end stays behind "...", and a
	// wide character that does not fit whole is left out.
	if got := ellipsis("/日本語のコンテナ", 8); got != "...テナ" || cells(got) > 8 {
		t.Errorf("ellipsis of a wide label = %q (%d cells)", got, cells(got))
	}
}

func TestTableMarksTheSortColumn(t *testing.T) {
	s := screen()
	for k, want := range map[SortKey]string{ByWait: "WAIT/s*", ByRun: "RUN/s*", ByRatio: "WAIT/RUN*", ByTimeslices: "SLICES/s*", ByTasks: "TASKS*", ByName: "CGROUP*"} {
		s.Sort = k
		h := s.Table(100)[0]
		if strings.Count(h, "*") != 1 || !strings.Contains(h, want) {
			t.Errorf("sort %s: header %q, want one mark, on %s", k, h, want)
		}
	}
}

func TestHeader(t *testing.T) {
	s := screen()
	s.Filter = "web"
	got := s.Header(0)
	want := []string{
		"schedstatd top - http://127.0.0.1:10271/metrics  every 2s  03:04:05",
		"node  run 1.900/s  wait 4.250/s  wait/run 2.24  slices 2000/s  tasks 170",
		`view: cgroups  sort: wait/s (largest first)  0 of 0 rows  filter: "web"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Header (-want +got):\n%s", diff)
	}
	s.Pending = true
	if got := s.Header(0)[1]; !strings.Contains(got, "collecting") {
		t.Errorf("pending node line: %q", got)
	}
}

func TestFrame80x24(t *testing.T) {
	var rows []Row
	for i := range 40 {
		rows = append(rows, Row{Label: fmt.Sprintf("/cg%02d", i), IDs: []string{fmt.Sprintf("/cg%02d", i)}, Known: true, Wait: float64(40 - i)})
	}
	s := screen(rows...)
	lines, header := s.Frame(80, 24, HelpLine)
	if len(lines) != 24 {
		t.Fatalf("%d lines, want 24:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("line of %d: %q", n, l)
		}
	}
	if !strings.HasPrefix(lines[header], "CGROUP") {
		t.Errorf("line %d is %q, want the column header", header, lines[header])
	}
	if lines[23] != HelpLine {
		t.Errorf("last line %q, want the help line", lines[23])
	}
	// 24 lines: 3 of header, the column header, 18 rows, a "more" line,
	// the help line.
	if !strings.HasPrefix(lines[22], "... 22 more rows") {
		t.Errorf("line 22: %q", lines[22])
	}
	if !strings.HasPrefix(lines[4], "/cg00") || !strings.HasPrefix(lines[21], "/cg17") {
		t.Errorf("rows: first %q, last %q", lines[4], lines[21])
	}

	// Few rows: the help line still ends the screen.
	lines, _ = screen(rows[:2]...).Frame(80, 24, HelpLine)
	if len(lines) != 24 || lines[23] != HelpLine || lines[7] != "" {
		t.Errorf("short frame:\n%s", strings.Join(lines, "\n"))
	}
	// A tiny terminal still gets no more lines than it has.
	for h := 1; h < 8; h++ {
		if lines, _ := s.Frame(80, h, HelpLine); len(lines) > h {
			t.Errorf("height %d: %d lines", h, len(lines))
		}
	}
}

func TestEllipsis(t *testing.T) {
	for _, tc := range []struct {
		s    string
		w    int
		want string
	}{
		{"/short", 10, "/short"},
		{"/exactly10", 10, "/exactly10"},
		{"/a/b/c/d/e/f", 8, "...d/e/f"},
		{"/a/b/c", 3, "b/c"},
		{"/ünï/cödé", 6, "...ödé"},
		{"/日本語", 6, "...語"},
		{"/日本語", 5, "...語"},
	} {
		if got := ellipsis(tc.s, tc.w); got != tc.want {
			t.Errorf("ellipsis(%q, %d) = %q, want %q", tc.s, tc.w, got, tc.want)
		}
	}
}
