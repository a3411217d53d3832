package check

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// progress writes the progress line: rewritten in place on a terminal
// every fifth of a second, a plain line every ten seconds otherwise.
type progress struct {
	w     io.Writer
	tty   bool
	plan  string
	last  time.Time
	shown bool
}

func newProgress(w io.Writer, plan string) *progress {
	p := &progress{w: w, plan: plan, last: time.Now()}
	if f, ok := w.(*os.File); ok {
		_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
		p.tty = err == nil
	}
	return p
}

func (p *progress) line(rep Report, elapsed time.Duration) string {
	s := fmt.Sprintf("check %s: %d rounds, %d ops checked, %s", p.plan, rep.Rounds, rep.Ops, elapsed.Truncate(time.Second))
	if rep.Undecided > 0 {
		s += fmt.Sprintf(", %d undecided", rep.Undecided)
	}
	return s
}

func (p *progress) update(rep Report, elapsed time.Duration) {
	if p.w == nil {
		return
	}
	every := 10 * time.Second
	if p.tty {
		every = 200 * time.Millisecond
	}
	if time.Since(p.last) < every {
		return
	}
	p.last = time.Now()
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", p.line(rep, elapsed))
		p.shown = true
		return
	}
	fmt.Fprintln(p.w, p.line(rep, elapsed))
}

// note writes a line of its own.
func (p *progress) note(format string, args ...any) {
	if p.w == nil {
		return
	}
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
	fmt.Fprintf(p.w, "check %s: "+format+"\n", append([]any{p.plan}, args...)...)
}

func (p *progress) done(rep Report) {
	if p.w == nil {
		return
	}
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintln(p.w, p.line(rep, rep.Elapsed))
}
