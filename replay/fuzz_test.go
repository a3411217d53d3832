package replay

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The parser takes any input without panicking: each line parses or is refused with its
// line number, a parsed line keeps its text, and calls pair or are refused.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../testdata/traces/*.strace")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		// A few lines of each trace, so that the fuzzer starts from every form.
		lines := strings.SplitAfter(string(data), "\n")
		for i := 0; i < len(lines); i += 40 {
			f.Add(strings.Join(lines[i:min(i+40, len(lines))], ""))
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		_, events, err := Parse("f.strace", strings.NewReader(src))
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("error %v is no SyntaxError", err)
			}
			return
		}
		for _, ev := range events {
			again, err := ParseLine(ev.Text)
			if err != nil {
				t.Fatalf("line %q parsed once and not again: %v", ev.Text, err)
			}
			again.Line = ev.Line
			if again != ev {
				t.Fatalf("line %q parses two ways", ev.Text)
			}
			splitTop(ev.Args)
			argWaitStatus(ev.Args)
			argStruct("{" + ev.Info + "}")
		}
		if calls, err := pairCalls(events); err == nil {
			for _, c := range calls {
				if c.exit != nil && c.exit.Kind != KindCall && c.exit.Kind != KindResumed {
					t.Fatalf("call at line %d ends at a %d line", c.entry.Line, c.exit.Kind)
				}
			}
		}
	})
}

// Any trace that parses replays on the model without panicking or hanging, and its counts
// add up.
func FuzzReplay(f *testing.F) {
	addTraces(f, "sem", "threadexec", "unshare", "timeout")
	f.Fuzz(func(t *testing.T, src string) {
		h, events, err := Parse("f.strace", strings.NewReader(src))
		if err != nil || len(events) > 200 {
			return
		}
		type result struct {
			s   *Summary
			err error
		}
		done := make(chan result, 1)
		go func() {
			s, err := Replay("f.strace", h, events, Options{Explain: 1})
			done <- result{s, err}
		}()
		var s *Summary
		select {
		case res := <-done:
			if res.err != nil {
				return
			}
			s = res.s
		case <-time.After(20 * time.Second):
			t.Fatalf("the replay hangs")
		}
		if s.Agree+s.Disagree != s.Compared || s.Compared+s.NotCompared+total(s.Outside)+total(s.Unsupported) != s.Calls {
			t.Fatalf("counts do not add up: %+v", s)
		}
	})
}

// Any trace that parses compiles into a program, or is refused with FILE:LINE; a program's
// passes, two side by side on one model, neither panic nor hang, give every call the result
// the replay's model gave it, and leave nothing behind.
func FuzzCompile(f *testing.F) {
	addTraces(f, "sem", "threadexec", "unshare", "timeout", "nice")
	f.Fuzz(func(t *testing.T, src string) {
		h, events, err := Parse("f.strace", strings.NewReader(src))
		if err != nil || len(events) > 200 {
			return
		}
		k, workers := newWorkers(t, nil, 2)
		done := make(chan error, 1)
		go func() {
			p, err := Compile("f.strace", h, events)
			if err != nil {
				if _, ok := err.(*SyntaxError); !ok {
					err = fmt.Errorf("%v is no SyntaxError", err)
				} else {
					err = nil
				}
				done <- err
				return
			}
			errs := make(chan error, 2)
			for _, w := range workers {
				r := p.NewRunner(w)
				go func() { errs <- r.Pass() }()
			}
			for range workers {
				if err := <-errs; err != nil {
					done <- err
					return
				}
			}
			k.Quiesce()
			if err := k.CheckInvariants(); err != nil {
				done <- err
				return
			}
			if n := k.RootNamespace().Allocated(); n != 3 {
				done <- fmt.Errorf("%d pids in use after the passes, want 3", n)
				return
			}
			done <- nil
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("the compile or a pass hangs")
		}
	})
}

// addTraces adds the recorded traces of those names to f's corpus.
func addTraces(f *testing.F, names ...string) {
	for _, name := range names {
		data, err := os.ReadFile("../testdata/traces/" + name + ".strace")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
}
