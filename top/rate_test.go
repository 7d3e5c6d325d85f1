package top

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// sample builds a Sample at t0+at of series.
func sample(at time.Duration, series ...Series) *Sample {
	s := &Sample{Time: t0.Add(at), Series: map[string]Series{}}
	for _, se := range series {
		s.Series[se.ID] = se
	}
	return s
}

// byID orders rows for comparison.
var byID = cmpopts.SortSlices(func(a, b Row) bool { return a.IDs[0] < b.IDs[0] })

func TestRates(t *testing.T) {
	tests := []struct {
		name      string
		prev, cur *Sample
		want      []Row
	}{
		{
			name: "steady growth over two seconds",
			prev: sample(0, Series{ID: "/a", RunSeconds: 10, WaitSeconds: 4, Timeslices: 100, Tasks: 3}),
			cur:  sample(2*time.Second, Series{ID: "/a", RunSeconds: 13, WaitSeconds: 5, Timeslices: 160, Tasks: 4}),
			want: []Row{{Label: "/a", IDs: []string{"/a"}, Run: 1.5, Wait: 0.5, Timeslices: 30, Tasks: 4, Known: true}},
		},
		{
			name: "counter reset: the new value is the increase",
			prev: sample(0, Series{ID: "/a", RunSeconds: 1000, WaitSeconds: 500, Timeslices: 9000, Tasks: 7}),
			cur:  sample(2*time.Second, Series{ID: "/a", RunSeconds: 3, WaitSeconds: 1, Timeslices: 40, Tasks: 7}),
			want: []Row{{Label: "/a", IDs: []string{"/a"}, Run: 1.5, Wait: 0.5, Timeslices: 20, Tasks: 7, Known: true}},
		},
		{
			name: "one counter reset, the others grew",
			prev: sample(0, Series{ID: "/a", RunSeconds: 10, WaitSeconds: 500, Timeslices: 100}),
			cur:  sample(time.Second, Series{ID: "/a", RunSeconds: 11, WaitSeconds: 2, Timeslices: 110}),
			want: []Row{{Label: "/a", IDs: []string{"/a"}, Run: 1, Wait: 2, Timeslices: 10, Known: true}},
		},
		{
			name: "throttled time and pressure, where both samples have them",
			prev: sample(0, Series{ID: "/q", RunSeconds: 1, WaitSeconds: 4, ThrottledSeconds: 3, HasThrottled: true, PressureSeconds: 4, HasPressure: true, Tasks: 1},
				Series{ID: "/late", RunSeconds: 1, WaitSeconds: 1, Tasks: 1}),
			cur: sample(2*time.Second, Series{ID: "/q", RunSeconds: 1.4, WaitSeconds: 5.6, ThrottledSeconds: 4.2, HasThrottled: true, PressureSeconds: 5.6, HasPressure: true, Tasks: 1},
				Series{ID: "/late", RunSeconds: 2, WaitSeconds: 2, ThrottledSeconds: 1, HasThrottled: true, Tasks: 1}),
			want: []Row{
				{Label: "/q", IDs: []string{"/q"}, Run: 0.2, Wait: 0.8, Throttled: 0.6, HasThrottled: true, Pressure: 0.8, HasPressure: true, Tasks: 1, Known: true},
				{Label: "/late", IDs: []string{"/late"}, Run: 0.5, Wait: 0.5, Tasks: 1, Known: true},
			},
		},
		{
			name: "unchanged counters give zero rates",
			prev: sample(0, Series{ID: "/a", RunSeconds: 10, WaitSeconds: 5, Timeslices: 100, Tasks: 2}),
			cur:  sample(time.Second, Series{ID: "/a", RunSeconds: 10, WaitSeconds: 5, Timeslices: 100, Tasks: 2}),
			want: []Row{{Label: "/a", IDs: []string{"/a"}, Tasks: 2, Known: true}},
		},
		{
			name: "a series that appeared has no rate yet; one that vanished is gone",
			prev: sample(0,
				Series{ID: "/kept", RunSeconds: 1, WaitSeconds: 1, Timeslices: 1},
				Series{ID: "/gone", RunSeconds: 50, WaitSeconds: 50, Timeslices: 50, Tasks: 9}),
			cur: sample(time.Second,
				Series{ID: "/kept", RunSeconds: 2, WaitSeconds: 3, Timeslices: 4, Tasks: 1},
				Series{ID: "/new", RunSeconds: 80, WaitSeconds: 70, Timeslices: 60, Tasks: 5, Container: "c", Pod: "p", Namespace: "ns"}),
			want: []Row{
				{Label: "/kept", IDs: []string{"/kept"}, Run: 1, Wait: 2, Timeslices: 3, Tasks: 1, Known: true},
				{Label: "/new", IDs: []string{"/new"}, Tasks: 5, Container: "c", Pod: "p", Namespace: "ns"},
			},
		},
		{
			name: "every series new after the daemon changed hierarchy",
			prev: sample(0, Series{ID: "/x", RunSeconds: 1}),
			cur:  sample(time.Second, Series{ID: "/y", RunSeconds: 1, Tasks: 1}),
			want: []Row{{Label: "/y", IDs: []string{"/y"}, Tasks: 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Rates(tc.prev, tc.cur)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, byID, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("Rates (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRatesRejectsSamplesOutOfOrder(t *testing.T) {
	a := sample(time.Second, Series{ID: "/a"})
	for _, b := range []*Sample{sample(time.Second, Series{ID: "/a"}), sample(0, Series{ID: "/a"})} {
		if _, err := Rates(a, b); err == nil {
			t.Errorf("Rates from %s to %s: no error", a.Time, b.Time)
		}
	}
}

func TestUnrated(t *testing.T) {
	got := Unrated(sample(0, Series{ID: "/a", RunSeconds: 5, Tasks: 2}, Series{ID: "/b", Tasks: 1}))
	want := []Row{{Label: "/a", IDs: []string{"/a"}, Tasks: 2}, {Label: "/b", IDs: []string{"/b"}, Tasks: 1}}
	if diff := cmp.Diff(want, got, byID); diff != "" {
		t.Errorf("Unrated (-want +got):\n%s", diff)
	}
}

func TestRatio(t *testing.T) {
	for _, tc := range []struct {
		row  Row
		want float64
	}{
		{Row{Known: true, Run: 2, Wait: 1}, 0.5},
		{Row{Known: true, Run: 0.5, Wait: 2}, 4},
		{Row{Known: true, Run: 0, Wait: 1}, math.NaN()},
		{Row{Known: false, Run: 1, Wait: 1}, math.NaN()},
	} {
		got := tc.row.Ratio()
		if got != tc.want && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("%+v.Ratio() = %v, want %v", tc.row, got, tc.want)
		}
	}
}

// labels returns the rows' labels in order.
func labels(rows []Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Label
	}
	return out
}

func TestSort(t *testing.T) {
	rows := []Row{
		{Label: "/idle", Known: true, Run: 0, Wait: 0, Timeslices: 1, Tasks: 1},
		{Label: "/busy", Known: true, Run: 1.9, Wait: 0.1, Timeslices: 500, Tasks: 2},
		{Label: "/starved", Known: true, Run: 0.5, Wait: 3, Timeslices: 50, Tasks: 6},
		{Label: "/new", Known: false, Tasks: 9},
		{Label: "/mid", Known: true, Run: 1, Wait: 1, Timeslices: 100, Tasks: 3},
	}
	tests := []struct {
		key     SortKey
		reverse bool
		want    []string
	}{
		{ByWait, false, []string{"/starved", "/mid", "/busy", "/idle", "/new"}},
		{ByWait, true, []string{"/idle", "/busy", "/mid", "/starved", "/new"}},
		{ByRun, false, []string{"/busy", "/mid", "/starved", "/idle", "/new"}},
		// /idle ran nothing, so it has no ratio and goes last with /new.
		{ByRatio, false, []string{"/starved", "/mid", "/busy", "/idle", "/new"}},
		{ByTimeslices, false, []string{"/busy", "/mid", "/starved", "/idle", "/new"}},
		{ByTasks, false, []string{"/new", "/starved", "/mid", "/busy", "/idle"}},
		{ByName, false, []string{"/busy", "/idle", "/mid", "/new", "/starved"}},
		{ByName, true, []string{"/starved", "/new", "/mid", "/idle", "/busy"}},
	}
	for _, tc := range tests {
		got := slices.Clone(rows)
		Sort(got, tc.key, tc.reverse)
		if diff := cmp.Diff(tc.want, labels(got)); diff != "" {
			t.Errorf("Sort by %s reverse=%v (-want +got):\n%s", tc.key, tc.reverse, diff)
		}
	}
}

func TestSortTiesByLabel(t *testing.T) {
	rows := []Row{{Label: "/c", Known: true}, {Label: "/a", Known: true}, {Label: "/b", Known: true}}
	Sort(rows, ByWait, false)
	if diff := cmp.Diff([]string{"/a", "/b", "/c"}, labels(rows)); diff != "" {
		t.Errorf("ties (-want +got):\n%s", diff)
	}
}

func TestFilter(t *testing.T) {
	rows := []Row{
		{Label: "prod/web-7d9/nginx", IDs: []string{"/kubepods/pod1/abc"}, Namespace: "prod", Pod: "web-7d9", Container: "nginx"},
		{Label: "/system.slice/sshd.service", IDs: []string{"/system.slice/sshd.service"}},
		{Label: "a172cedcae47", IDs: []string{"/docker/a172cedcae47474b"}},
	}
	tests := []struct {
		sub  string
		want []string
	}{
		{"", []string{"prod/web-7d9/nginx", "/system.slice/sshd.service", "a172cedcae47"}},
		{"NGINX", []string{"prod/web-7d9/nginx"}},
		{"kubepods", []string{"prod/web-7d9/nginx"}},
		{"docker", []string{"a172cedcae47"}},
		{"slice", []string{"/system.slice/sshd.service"}},
		{"nothing", []string{}},
	}
	for _, tc := range tests {
		got := labels(Filter(rows, tc.sub))
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Filter %q (-want +got):\n%s", tc.sub, diff)
		}
	}
	if len(rows) != 3 || rows[0].Label != "prod/web-7d9/nginx" {
		t.Errorf("Filter changed its input: %v", labels(rows))
	}
}

func TestFilterMatchesAnyCase(t *testing.T) {
	rows := []Row{{Label: "/Mixed/Case", IDs: []string{"/Mixed/Case"}}}
	if got := Filter(rows, "mixed/c"); len(got) != 1 {
		t.Errorf("Filter mixed/c = %v", labels(got))
	}
	if got := Filter(rows, strings.ToUpper("mixed")); len(got) != 1 {
		t.Errorf("Filter MIXED = %v", labels(got))
	}
}

func TestLimitExplains(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Row
		want bool
	}{
		{"one thread, throttled through most of its wait", Row{Known: true, Wait: 0.8, Throttled: 0.6, HasThrottled: true, Tasks: 1}, true},
		{"one thread, beside a neighbour", Row{Known: true, Wait: 0.8, Throttled: 0.3, HasThrottled: true, Tasks: 1}, false},
		// Four threads on two throttled run queues wait twice the
		// throttled time for the limit alone.
		{"four threads on two run queues", Row{Known: true, Wait: 3.84, Throttled: 1.79, HasThrottled: true, Tasks: 4}, true},
		{"no quota", Row{Known: true, Wait: 0.8, Tasks: 1}, false},
		{"no rate yet", Row{Wait: 0.8, Throttled: 0.8, HasThrottled: true, Tasks: 1}, false},
	} {
		if got := tc.r.LimitExplains(); got != tc.want {
			t.Errorf("%s: LimitExplains() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
