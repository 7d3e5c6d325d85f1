package top

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
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

// sampled is one result of the sampling goroutine.
type sampled struct {
	s   *Sample
	err error
}

// Live shows st's view of src on t, refreshed every interval, until a key
// quits, t.In ends or ctx is done. Samples are taken on a goroutine of its
// own, which alone uses src and has ended when Live returns. If the first
// sample fails, Live returns its error, unless the daemon is only not
// ready yet; a later failure is shown on the last line and tried again an
// interval later.
func Live(ctx context.Context, src Source, st State, opt Options, t Terminal) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	samples := make(chan sampled)
	wg.Add(1)
	go func() {
		defer wg.Done()
		sampleEvery(ctx, src, opt.Interval, samples)
	}()
	keys := make(chan []byte)
	go readKeys(ctx, t.In, keys)

	var (
		prev    *Sample
		rows    []Row
		lastErr error
		shown   = opt.Interval
		at      = time.Now()
	)
	draw := func() error {
		w, h := t.Size()
		scr := st.Screen(rows, opt.Source, shown, at)
		scr.Pending = prev == nil || !anyKnown(rows)
		lines, header := scr.Frame(w, h, st.Bottom(lastErr))
		return paint(t.Out, lines, header, w)
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
			if r.err != nil && prev == nil && !errors.Is(r.err, ErrNotReady) {
				// Nothing shown yet: a wrong URL or an absent daemon is
				// better said plainly than retried on the last line.
				return r.err
			}
			if r.err != nil {
				lastErr = r.err
				break
			}
			lastErr = nil
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
			for _, c := range b {
				switch st.Key(c) {
				case Quit:
					return nil
				case Redraw:
					redraw = true
				}
			}
			if !redraw {
				continue
			}
		}
		if err := draw(); err != nil {
			return err
		}
	}
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

// sampleEvery sends a sample of src at once and then every interval until ctx
// is done.
func sampleEvery(ctx context.Context, src Source, interval time.Duration, out chan<- sampled) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		s, err := src.Sample(ctx)
		select {
		case out <- sampled{s, err}:
		case <-ctx.Done():
			return
		}
		select {
		case <-tick.C:
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

// paint draws lines from the top left, the column header in reverse
// video, each line cleared to its end and the screen below the last.
func paint(w io.Writer, lines []string, header, width int) error {
	var b strings.Builder
	b.WriteString(home)
	for i, l := range lines {
		if i == header {
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
