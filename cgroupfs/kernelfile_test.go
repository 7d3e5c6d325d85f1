package cgroupfs

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFindKernelFiles(t *testing.T) {
	with := func(f fakeFS, files ...string) fakeFS {
		g := fakeFS{types: f.types, mounts: f.mounts, files: map[string]bool{}}
		for k, v := range f.files {
			g.files[k] = v
		}
		for _, p := range files {
			g.files[p] = true
		}
		return g
	}
	hybridPSI := with(hybrid, "/r/cpu/cpu.cfs_period_us", "/r/cpu/cpu.stat", "/r/unified/cpu.pressure")
	tests := []struct {
		name string
		fs   fakeFS
		hier string
		want kernelFiles
	}{
		{"pure v2", with(pureV2, "/r/cpu.pressure"), "", kernelFiles{pressure: kernelFile{file: pressureFile}}},
		{"pure v2, psi=0", pureV2, "", kernelFiles{}},
		{"hybrid, cpuacct walked", hybridPSI, "", kernelFiles{
			bandwidth: kernelFile{file: bandwidthFile, mirror: "/r/cpu"},
			pressure:  kernelFile{file: pressureFile, mirror: "/r/unified"},
		}},
		{"hybrid, cpu walked", hybridPSI, "cpu", kernelFiles{
			bandwidth: kernelFile{file: bandwidthFile},
			pressure:  kernelFile{file: pressureFile, mirror: "/r/unified"},
		}},
		{"hybrid, unified walked", hybridPSI, Unified, kernelFiles{pressure: kernelFile{file: pressureFile}}},
		{"hybrid, psi=0", with(hybrid, "/r/cpu/cpu.cfs_period_us", "/r/cpu/cpu.stat"), "", kernelFiles{
			bandwidth: kernelFile{file: bandwidthFile, mirror: "/r/cpu"},
		}},
		{"v1 cpu,cpuacct together", with(combined, "/r/cpu,cpuacct/cpu.cfs_period_us", "/r/cpu,cpuacct/cpu.stat"), "", kernelFiles{
			bandwidth: kernelFile{file: bandwidthFile},
		}},
		{"v1 without CFS bandwidth", hybrid, "", kernelFiles{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := detect("/r", tt.hier, tt.fs.probe())
			if err != nil {
				t.Fatal(err)
			}
			got := findKernelFiles(l, tt.fs.probe())
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(kernelFiles{}, kernelFile{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// kernelRow is a cgroup's kernel files as the fixture tests compare them.
type kernelRow struct {
	Bandwidth Bandwidth
	Pressure  Pressure
	Err       string
}

// kernelRows returns the kernel files of every cgroup in l, by path.
func kernelRows(l *Listing) map[string]kernelRow {
	out := make(map[string]kernelRow)
	for _, c := range l.Cgroups {
		r := kernelRow{Bandwidth: c.Bandwidth, Pressure: c.Pressure}
		switch {
		case c.Err == nil:
		case errors.Is(c.Err, ErrParse):
			r.Err = "parse"
		default:
			r.Err = "other"
		}
		out[c.Path] = r
	}
	return out
}

func TestKernelFilesFixtureV2(t *testing.T) {
	const (
		pod1 = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod6c2a7f1e_3b4d_4e5f_8a9b_0c1d2e3f4a5b.slice"
		app  = pod1 + "/cri-containerd-a172cedcae47474b615c54d510a5d84a8dea3032e958587430b413538be3f333.scope"
		side = pod1 + "/cri-containerd-6c8b4535ccc87f19061c4646189e33d78f01c8b63dc4e3cb2f630b1796ee93b6.scope"
	)
	zeros := Bandwidth{HasThrottling: true, HasBursts: true}
	want := map[string]kernelRow{
		"/": {Bandwidth: zeros, Pressure: Pressure{SomeNanoseconds: 32732119000, HasSome: true, HasFull: true}},
		// Some only: a kernel before 5.13.
		"/kubepods.slice": {Bandwidth: zeros, Pressure: Pressure{HasSome: true}},
		app: {
			Bandwidth: Bandwidth{Periods: 1200, ThrottledPeriods: 340, ThrottledNanoseconds: 5.1e9, HasThrottling: true, Bursts: 3, BurstNanoseconds: 12e6, HasBursts: true},
			Pressure:  Pressure{SomeNanoseconds: 6.2e9, FullNanoseconds: 4.1e9, HasSome: true, HasFull: true},
		},
		// No cpu controller: cpu.stat without the bandwidth keys.
		side: {},
		// A cpu.pressure without total=.
		"/system.slice/containerd.service": {Bandwidth: zeros, Err: "parse"},
		// No cpu.stat at all: neither usage nor bandwidth.
		"/system.slice/kubelet.service": {Err: "other"},
	}
	h := newHierarchy(fixtureLayout(t, "v2", V2, cpuStatUsage))
	h.useKernelFiles(kernelFiles{pressure: kernelFile{file: pressureFile}})
	var l Listing
	for pass := range 2 {
		if err := h.List(&l); err != nil {
			t.Fatal(err)
		}
		got := kernelRows(&l)
		for path, w := range want {
			if diff := cmp.Diff(w, got[path]); diff != "" {
				t.Errorf("pass %d, %s (-want +got):\n%s", pass, path, diff)
			}
		}
		// Every other cgroup has zero bandwidth counters (its cpu.stat
		// says so) and no cpu.pressure.
		for path, g := range got {
			if _, ok := want[path]; !ok && (g.Bandwidth != zeros || g.Pressure != (Pressure{})) {
				t.Errorf("pass %d, %s: %+v", pass, path, g)
			}
		}
	}
}

func TestKernelFilesFixtureV1(t *testing.T) {
	const pod2 = "/kubepods/podd4e5f6a7-b8c9-4d0e-9f1a-2b3c4d5e6f70"
	cpu, err := filepath.Abs(filepath.Join(fixtureDir, "v1/cpu"))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := filepath.Abs(filepath.Join(fixtureDir, "v2"))
	if err != nil {
		t.Fatal(err)
	}
	zeros := Bandwidth{HasThrottling: true, HasBursts: true}
	throttled := Bandwidth{Periods: 250, ThrottledPeriods: 200, ThrottledNanoseconds: 16e9, HasThrottling: true}
	rootPressure := Pressure{SomeNanoseconds: 32732119000, HasSome: true, HasFull: true}
	tests := []struct {
		name  string
		dir   string
		usage usageSource
		files kernelFiles
		want  map[string]kernelRow
	}{
		{
			// cpuacct walked, bandwidth from the cpu twin at the same
			// path, pressure from the v2 twin: only the root and
			// /kubepods have twins in both.
			name: "cpuacct", dir: "v1/cpuacct", usage: usageSource{file: usageFileV1},
			files: kernelFiles{bandwidth: kernelFile{file: bandwidthFile, mirror: cpu}, pressure: kernelFile{file: pressureFile, mirror: v2}},
			want: map[string]kernelRow{
				"/":                   {Bandwidth: zeros, Pressure: rootPressure},
				"/kubepods":           {Bandwidth: zeros},
				"/kubepods/burstable": {},
				pod2:                  {Bandwidth: throttled},
				"/docker":             {},
			},
		},
		{
			name: "cpu", dir: "v1/cpu", usage: usageSource{file: usageFileV1, mirror: "v1/cpuacct"},
			files: kernelFiles{bandwidth: kernelFile{file: bandwidthFile}},
			want: map[string]kernelRow{
				"/":         {Bandwidth: zeros},
				"/cpu-only": {Err: "parse"},
				"/kubepods": {Bandwidth: zeros},
				pod2:        {Bandwidth: throttled},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHierarchy(fixtureLayout(t, tt.dir, V1, tt.usage))
			h.useKernelFiles(tt.files)
			var l Listing
			if err := h.List(&l); err != nil {
				t.Fatal(err)
			}
			got := kernelRows(&l)
			for path, w := range tt.want {
				g := got[path]
				if w.Err == "" && g.Err != "" {
					// Errors of the fixture's own (a bad tasks file)
					// are TestListFixtureV1's.
					g.Err = ""
				}
				if diff := cmp.Diff(w, g); diff != "" {
					t.Errorf("%s (-want +got):\n%s", path, diff)
				}
			}
		})
	}
}

// TestKernelFilesSteadyPassAllocs walks a v1 tree with bandwidth and
// pressure from twins that some of its cgroups have and others do not:
// once warm, a pass allocates nothing.
func TestKernelFilesSteadyPassAllocs(t *testing.T) {
	dir := t.TempDir()
	acct, cpu, v2 := filepath.Join(dir, "cpuacct"), filepath.Join(dir, "cpu"), filepath.Join(dir, "unified")
	for _, rel := range []string{"", "a", "a/b", "c"} {
		mkdir(t, filepath.Join(acct, rel))
		writeFile(t, filepath.Join(acct, rel, threadsFileV1), "1\n2\n")
		writeFile(t, filepath.Join(acct, rel, usageFileV1), "12345\n")
	}
	for _, rel := range []string{"", "a"} {
		mkdir(t, filepath.Join(cpu, rel))
		writeFile(t, filepath.Join(cpu, rel, bandwidthFile), "nr_periods 3\nnr_throttled 2\nthrottled_time 1000\nnr_bursts 0\nburst_time 0\n")
	}
	for _, rel := range []string{"", "a/b"} {
		mkdir(t, filepath.Join(v2, rel))
		writeFile(t, filepath.Join(v2, rel, pressureFile), "some avg10=0.00 avg60=0.00 avg300=0.00 total=5\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1\n")
	}
	h := newHierarchy(layout{version: V1, name: "cpuacct", dir: acct, usage: usageSource{file: usageFileV1}})
	h.useKernelFiles(kernelFiles{bandwidth: kernelFile{file: bandwidthFile, mirror: cpu}, pressure: kernelFile{file: pressureFile, mirror: v2}})
	var l Listing
	if err := h.List(&l); err != nil {
		t.Fatal(err)
	}
	if l.Errors != 0 || len(l.Cgroups) != 4 {
		t.Fatalf("%d cgroups, %d errors; want 4 and none", len(l.Cgroups), l.Errors)
	}
	got := kernelRows(&l)
	if !got["/a"].Bandwidth.HasThrottling || got["/a/b"].Bandwidth.HasThrottling || !got["/a/b"].Pressure.HasFull || got["/c"].Pressure.HasSome {
		t.Fatalf("kernel files read from the wrong twins: %+v", got)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if err := h.List(&l); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("steady pass: %v allocations, want 0", allocs)
	}
}

// BenchmarkWalkKernelFiles walks 1,000 real cgroups of the v1 cpuacct
// hierarchy, with twins at the same paths in the cpu and v2 hierarchies,
// without the kernel files, with the bandwidth counters from the cpu
// twins, and with those and the pressure from the v2 twins, opened each
// pass or kept open: what each costs per cgroup and pass.
func BenchmarkWalkKernelFiles(b *testing.B) {
	cpu, unified := realHierarchy(b, "cpu"), realHierarchy(b, Unified)
	lay := benchTree(b, "cpuacct")
	top := filepath.Base(lay.dir)
	var rels []string
	for s := range 9 {
		rels = append(rels, fmt.Sprintf("slice%d", s))
		for c := range 110 {
			rels = append(rels, fmt.Sprintf("slice%d/cg%d", s, c))
		}
	}
	makeTwin(b, cpu, top, rels...)
	makeTwin(b, unified, top, rels...)
	bw := kernelFile{file: bandwidthFile, mirror: filepath.Join(cpu, top)}
	psi := kernelFile{file: pressureFile, mirror: filepath.Join(unified, top)}
	for _, tc := range []struct {
		name  string
		files kernelFiles
		keep  bool
	}{
		{"counter-only", kernelFiles{}, false},
		{"bandwidth", kernelFiles{bandwidth: bw}, false},
		{"bandwidth+pressure", kernelFiles{bandwidth: bw, pressure: psi}, false},
		// The same three files of every cgroup held open and read with
		// one pread each.
		{"bandwidth+pressure+kept", kernelFiles{bandwidth: bw, pressure: psi}, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := newHierarchy(lay)
			h.useKernelFiles(tc.files)
			if tc.keep {
				h.KeepFiles(&countKeeper{max: 1 << 20})
				b.Cleanup(func() { h.Close() })
			}
			var l Listing
			if err := h.List(&l); err != nil {
				b.Fatal(err)
			}
			if tc.files.pressure.file != "" && !l.Cgroups[len(l.Cgroups)-1].Pressure.HasSome {
				b.Fatalf("no pressure read: %+v", l.Cgroups[len(l.Cgroups)-1])
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := h.List(&l); err != nil {
					b.Fatal(err)
				}
			}
			reportPerCgroup(b, len(l.Cgroups))
		})
	}
}
