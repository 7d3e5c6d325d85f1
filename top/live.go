package top

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"
)

// ANSI escapes the live view uses: the alternate screen, the cursor, home,
// erase to the end of the line and of the screen, reverse video.
const (
	enterScreen = "\x1b[?1049h\x1b[?25l"
	leaveScreen = "\x1b[?25h\x1b[?1049l"
	home        = "\x1b[H"
	eraseLine   = "\x1b[K"
	eraseBelow  = "\x1b[J"
	reverse     = "\x1b[7m"
	plain       = "\x1b[m"
)

// ErrNoTerminal is returned by RunTerminal when stdin or stdout is not a
// terminal.
var ErrNoTerminal = errors.New("the live view needs a terminal; use --once for one table (--output=json for tools)")

// Terminal is where the live view draws and reads keys.
type Terminal struct {
	// In gives the keys, one byte each, as a terminal in raw mode sends
	// them; its end quits.
	In io.Reader
	// Out is drawn on with ANSI escapes.
	Out io.Writer
	// Size returns the width and height in characters.
	Size func() (width, height int)
	// Resized, if not nil, receives when the size changed.
	Resized <-chan os.Signal
}

// RunTerminal runs Live on the terminal of in and out: in raw mode, on the
// alternate screen, redrawn when the window is resized. The terminal is
// restored however Live ends.
func RunTerminal(ctx context.Context, src Source, st State, opt Options, in, out *os.File) error {
	infd, outfd := int(in.Fd()), int(out.Fd())
	if !term.IsTerminal(infd) || !term.IsTerminal(outfd) {
		return ErrNoTerminal
	}
	old, err := term.MakeRaw(infd)
	if err != nil {
		return err
	}
	defer term.Restore(infd, old)
	io.WriteString(out, enterScreen)
	defer io.WriteString(out, leaveScreen)
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	size := func() (int, int) {
		w, h, err := term.GetSize(outfd)
		if err != nil || w <= 0 || h <= 0 {
			return 80, 24
		}
		return w, h
	}
	return Live(ctx, src, st, opt, Terminal{In: in, Out: out, Size: size, Resized: winch})
}

// sampled is one result of the sampling goroutine: a Sample of every
// cgroup, or the tasks of the target of generation gen.
type sampled struct {
	s     *Sample
	tasks TaskSample
	gen   int
	err   error
}

// wanted is what the sampling goroutine is to sample: the cgroups when
// target is nil, else the target's tasks. gen counts the changes, so a
// sample of what was wanted before is known for stale.
type wanted struct {
	mu     sync.Mutex
	target *Target
	gen    int
	// wake tells the goroutine to sample at once.
	wake chan struct{}
}

func (w *wanted) get() (*Target, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.target, w.gen
}

// set changes what is sampled and has it sampled at once.
func (w *wanted) set(t *Target) int {
	w.mu.Lock()
	if t != nil {
		c := *t
		t = &c
	}
	w.target = t
	w.gen++
	gen := w.gen
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return gen
}

// Live shows st's view of src on t, refreshed every interval, until a key
// quits, t.In ends or ctx is done. Samples are taken on a goroutine of its
// own, which alone uses src and has ended when Live returns. If the first
// sample fails, Live returns its error, unless the daemon is only not
// ready yet; a later failure is shown on the last line and tried again an
// interval later. Enter on a row drills down into its processes (src must
// be a TaskSource), Enter on a process into its threads, Backspace or Esc
// goes back.
func Live(ctx context.Context, src Source, st State, opt Options, t Terminal) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	want := &wanted{wake: make(chan struct{}, 1)}
	gen := want.set(st.Target())
	samples := make(chan sampled)
	wg.Add(1)
	go func() {
		defer wg.Done()
		sampleEvery(ctx, src, opt.Interval, samples, want)
	}()
	keys := make(chan []byte)
	go readKeys(ctx, t.In, keys)

	var (
		prev    *Sample
		rows    []Row
		lastErr error
		shown   = opt.Interval
		at      = time.Now()
		// The drilled-down view's last answer and rows.
		prevTasks TaskSample
		taskRows  []Row
		scr       *Screen
	)
	draw := func() error {
		w, h := t.Size()
		if st.Target() != nil {
			scr = st.Screen(taskRows, opt.Source, shown, at)
			scr.Pending = prevTasks == nil || !anyKnown(taskRows)
		} else {
			scr = st.Screen(rows, opt.Source, shown, at)
			scr.Pending = prev == nil || !anyKnown(rows)
		}
		lines, header := scr.Frame(w, h, st.Bottom(lastErr))
		return paint(t.Out, lines, header, selectedLine(scr, lines, header), w)
	}
	// retarget samples what st now shows; the answer before is kept when
	// it is of the same cgroups (a process's threads, or back to its
	// processes), so rates come with the next answer.
	retarget := func(old *Target) {
		nt := st.Target()
		gen = want.set(nt)
		if nt == nil || old == nil || !slices.Equal(nt.IDs, old.IDs) {
			prevTasks = nil
		}
		taskRows = nil
		if prevTasks != nil {
			taskRows = drilled(nt, prevTasks, nil)
		}
		lastErr = nil
	}
	if err := draw(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.Resized:
		case r := <-samples:
			if r.gen != gen {
				continue // for a view left since
			}
			if r.err != nil && prev == nil && prevTasks == nil && !errors.Is(r.err, ErrNotReady) && st.Target() == nil {
				// Nothing shown yet: a wrong URL or an absent daemon is
				// better said plainly than retried on the last line.
				return r.err
			}
			if r.err != nil {
				lastErr = r.err
				break
			}
			lastErr = nil
			if r.tasks != nil {
				if prevTasks != nil && !newer(prevTasks, r.tasks) {
					continue
				}
				named(st.Target(), r.tasks)
				next := drilled(st.Target(), prevTasks, r.tasks)
				carry(next, taskRows)
				if prevTasks != nil && len(r.tasks) > 0 && len(prevTasks) > 0 {
					shown = r.tasks[0].Time.Sub(prevTasks[0].Time)
				}
				prevTasks, taskRows = r.tasks, next
				if len(r.tasks) > 0 {
					at = r.tasks[0].Time
				}
				break
			}
			if prev != nil && r.s.Time.Equal(prev.Time) {
				// The same pass again: the daemon is slower than the
				// interval. Keep the rates of the last two passes.
				continue
			}
			rated := false
			if prev == nil {
				rows = Unrated(r.s)
			} else if next, err := Rates(prev, r.s); err == nil {
				rows, shown, rated = next, r.s.Time.Sub(prev.Time), true
			} else {
				// The clock went back: start afresh from this sample.
				rows = Unrated(r.s)
			}
			// The automatic view is chosen once, by the first rates,
			// so it does not flip from frame to frame.
			if st.View == ViewAuto && rated {
				st.View = st.View.Resolve(rows)
			}
			prev, at = r.s, r.s.Time
		case b, ok := <-keys:
			if !ok {
				return nil
			}
			redraw := false
			for _, a := range st.Input(b) {
				switch a {
				case Quit:
					return nil
				case Redraw:
					redraw = true
				case Up, Down:
					d := 1
					if a == Up {
						d = -1
					}
					st.Move(scr, d)
					redraw = true
				case Open:
					old := st.Target()
					if old != nil {
						c := *old
						old = &c
					}
					if st.Open(scr) {
						retarget(old)
						redraw = true
					}
				case Back:
					old := st.Target()
					if old != nil {
						c := *old
						old = &c
					}
					if st.Back() {
						retarget(old)
						redraw = true
					}
				}
				if redraw {
					// The next key of the same read acts on what it
					// sees after this one.
					if err := draw(); err != nil {
						return err
					}
					redraw = false
				}
			}
			continue
		}
		if err := draw(); err != nil {
			return err
		}
	}
}

// drilled returns the rows target shows from two answers: its processes,
// or the threads of its process.
func drilled(target *Target, prev, cur TaskSample) []Row {
	if cur == nil {
		cur, prev = prev, nil
	}
	rows := TaskRows(prev, cur)
	if target == nil || !target.Threads {
		return rows
	}
	threads, _ := ThreadsOf(rows, target.PID, target.Start)
	return threads
}

// newer reports whether cur comes from later passes than prev.
func newer(prev, cur TaskSample) bool {
	if len(prev) == 0 || len(cur) == 0 {
		return true
	}
	return cur[0].Time.After(prev[0].Time)
}

// selectedLine returns the index among lines of the screen's selected
// row, or -1 when it is not shown.
func selectedLine(s *Screen, lines []string, header int) int {
	if s == nil || s.Selected < 0 {
		return -1
	}
	i := header + 1 + s.Selected
	if i <= header || i >= len(lines)-1 || strings.HasPrefix(lines[i], "... ") {
		return -1
	}
	return i
}

// anyKnown reports whether any row has a rate.
func anyKnown(rows []Row) bool {
	for _, r := range rows {
		if r.Known {
			return true
		}
	}
	return false
}

// sampleEvery sends a sample of what want names at once, then every
// interval and whenever want changes, until ctx is done.
func sampleEvery(ctx context.Context, src Source, interval time.Duration, out chan<- sampled, want *wanted) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-want.wake: // this sample is of what it asks for
		default:
		}
		target, gen := want.get()
		r := sampled{gen: gen}
		if target == nil {
			r.s, r.err = src.Sample(ctx)
		} else {
			r.tasks, r.err = sampleTasks(ctx, src, target.IDs)
		}
		select {
		case out <- r:
		case <-want.wake:
			continue
		case <-ctx.Done():
			return
		}
		select {
		case <-tick.C:
		case <-want.wake:
			tick.Reset(interval)
		case <-ctx.Done():
			return
		}
	}
}

// readKeys sends what in gives until it ends or ctx is done; it then
// closes keys. A read that blocks keeps the goroutine until the terminal
// sends more or the process exits.
func readKeys(ctx context.Context, in io.Reader, keys chan<- []byte) {
	defer close(keys)
	buf := make([]byte, 64)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			select {
			case keys <- append([]byte(nil), buf[:n]...):
			case <-ctx.Done():
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// paint draws lines from the top left, the column header and the
// selected line in reverse video, each line cleared to its end and the
// screen below the last.
func paint(w io.Writer, lines []string, header, selected, width int) error {
	var b strings.Builder
	b.WriteString(home)
	for i, l := range lines {
		if i == header || i == selected {
			b.WriteString(reverse + pad(l, width) + plain)
		} else {
			b.WriteString(l + eraseLine)
		}
		if i < len(lines)-1 {
			b.WriteString("\r\n")
		}
	}
	b.WriteString(eraseBelow)
	_, err := io.WriteString(w, b.String())
	return err
}
