package top

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestKeys(t *testing.T) {
	tests := []struct {
		name    string
		start   State
		keys    string
		want    State
		actions []Action
	}{
		{"sort by run", State{}, "r", State{Sort: ByRun}, []Action{Redraw}},
		{"same key reverses", State{}, "rr", State{Sort: ByRun, Reverse: true}, []Action{Redraw, Redraw}},
		{"another key sorts afresh", State{Sort: ByRun, Reverse: true}, "t", State{Sort: ByTasks}, []Action{Redraw}},
		{"every sort key", State{}, "xsnw", State{Sort: ByWait}, []Action{Redraw, Redraw, Redraw, Redraw}},
		{"filter", State{}, "/web\r", State{Filter: "web"}, []Action{Redraw, Redraw, Redraw, Redraw, Redraw}},
		{"filter with newline", State{}, "/a\n", State{Filter: "a"}, []Action{Redraw, Redraw, Redraw}},
		{"keys are text while filtering", State{}, "/qrp\r", State{Filter: "qrp"}, []Action{Redraw, Redraw, Redraw, Redraw, Redraw}},
		{"backspace", State{}, "/abc\x7f\x08d\r", State{Filter: "ad"}, nil},
		{"backspace removes a whole rune", State{}, "/aé\x7f\r", State{Filter: "a"}, nil},
		{"ctrl-u clears the line", State{Filter: "old"}, "/\x15new\r", State{Filter: "new"}, nil},
		{"esc abandons the edit", State{Filter: "old"}, "/new\x1b", State{Filter: "old"}, nil},
		{"esc clears the filter", State{Filter: "old"}, "\x1b", State{}, []Action{Redraw}},
		{"esc without a filter", State{}, "\x1b", State{}, []Action{None}},
		{"p switches the view", State{View: ViewContainers}, "ppp", State{View: ViewContainers}, []Action{Redraw, Redraw, Redraw}},
		{"unknown keys", State{}, "zZ[A", State{}, []Action{None, None, None, None}},
		{"q quits", State{}, "q", State{}, []Action{Quit}},
		{"ctrl-c quits", State{}, "\x03", State{}, []Action{Quit}},
		{"ctrl-c quits while filtering", State{}, "/\x03", State{editing: true}, []Action{Redraw, Quit}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.start
			var actions []Action
			for i := 0; i < len(tc.keys); i++ {
				actions = append(actions, st.Key(tc.keys[i]))
			}
			if diff := cmp.Diff(tc.want, st, cmp.AllowUnexported(State{})); diff != "" {
				t.Errorf("state after %q (-want +got):\n%s", tc.keys, diff)
			}
			if tc.actions != nil {
				if diff := cmp.Diff(tc.actions, actions); diff != "" {
					t.Errorf("actions of %q (-want +got):\n%s", tc.keys, diff)
				}
			}
		})
	}
}

func TestBottom(t *testing.T) {
	var st State
	if got := st.Bottom(nil); got != HelpLine {
		t.Errorf("Bottom = %q", got)
	}
	if got := st.Bottom(errors.New("boom")); got != "error: boom" {
		t.Errorf("Bottom with an error = %q", got)
	}
	st.Key('/')
	st.Key('x')
	if got := st.Bottom(errors.New("boom")); got != "filter: x_   (Enter apply, Esc cancel)" {
		t.Errorf("Bottom while filtering = %q", got)
	}
}

func TestStateScreen(t *testing.T) {
	st := State{View: ViewAuto, Sort: ByRun, Filter: "a"}
	rows := []Row{cg("/", 3, 3, 9), cg("/a1", 1, 2, 1), cg("/a2", 2, 1, 1), cg("/b", 5, 5, 1)}
	s := st.Screen(rows, "src", 0, t0)
	if s.View != ViewCgroups || s.Total != 3 || s.Node == nil || s.Node.Run != 3 {
		t.Errorf("screen: view %s, total %d, node %+v", s.View, s.Total, s.Node)
	}
	if diff := cmp.Diff([]string{"/a2", "/a1"}, labels(s.Rows)); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}
