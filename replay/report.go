package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// Summary is what the replay of one trace found.
type Summary struct {
	File string `json:"file"`
	// Calls counts the trace's system calls, a call and its restarts once.
	Calls int `json:"calls"`
	// Compared counts the calls whose results were compared, Agree and Disagree how they
	// came out.
	Compared int `json:"compared"`
	Agree    int `json:"agree"`
	Disagree int `json:"disagree"`
	// Outside counts the calls outside the model's scope, and Unsupported the calls in
	// scope the model lacks, by reason.
	Outside     map[string]int `json:"outside"`
	Unsupported map[string]int `json:"unsupported"`
	// NotCompared counts the calls of tasks out of step after a divergence.
	NotCompared int `json:"not_compared"`
	// EndsChecked counts the +++ lines, EndsAgree those the model's task matched.
	EndsChecked int `json:"ends_checked"`
	EndsAgree   int `json:"ends_agree"`
	// Divergences lists every disagreement: the calls counted in Disagree, and the signal
	// and end lines the model did not match.
	Divergences []Divergence `json:"divergences"`

	injected int
}

// Divergence is one place where the model did something else than the trace shows.
type Divergence struct {
	Line        int    `json:"line"`
	Call        string `json:"call"`
	TraceResult string `json:"trace_result"`
	ModelResult string `json:"model_result"`

	explanation string
}

func newSummary(file string) *Summary {
	return &Summary{File: file, Outside: map[string]int{}, Unsupported: map[string]int{}, Divergences: []Divergence{}}
}

func (s *Summary) outside(reason string)     { s.Outside[reason]++ }
func (s *Summary) unsupported(reason string) { s.Unsupported[reason]++ }

// InScope is the number of calls that are not outside the model's scope.
func (s *Summary) InScope() int {
	n := s.Calls
	for _, v := range s.Outside {
		n -= v
	}
	return n
}

// WriteJSON writes the summaries as {"traces": [...]}.
func WriteJSON(w io.Writer, sums []*Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Traces []*Summary `json:"traces"`
	}{sums})
}

// WriteTable writes each summary as a table: the counts, the reasons, each divergence and,
// where the replay was asked to explain, the trace around it and the model's view.
func WriteTable(w io.Writer, sums []*Summary) error {
	for i, s := range sums {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s\n", s.File)
		tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  calls\tcompared\tagree\tdisagree\toutside\tunsupported\tnot compared\tends checked\tends agree\t\n")
		fmt.Fprintf(tw, "  %d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", s.Calls, s.Compared, s.Agree, s.Disagree,
			total(s.Outside), total(s.Unsupported), s.NotCompared, s.EndsChecked, s.EndsAgree)
		if err := tw.Flush(); err != nil {
			return err
		}
		if in := s.InScope(); in > 0 {
			fmt.Fprintf(w, "  compared %.1f%% of the %d calls in scope; %d signals injected\n",
				100*float64(s.Compared)/float64(in), in, s.injected)
		}
		writeReasons(w, "outside", s.Outside)
		writeReasons(w, "unsupported", s.Unsupported)
		for _, d := range s.Divergences {
			fmt.Fprintf(w, "  %s:%d: %s: trace %s, model %s\n", s.File, d.Line, d.Call, d.TraceResult, d.ModelResult)
			if d.explanation != "" {
				fmt.Fprint(w, d.explanation)
			}
		}
	}
	return nil
}

func writeReasons(w io.Writer, what string, m map[string]int) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(w, "  %s: %s: %d\n", what, k, m[k])
	}
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// explain shows the trace around line and the model's view of t and its relatives.
func (r *replayer) explain(t *task, line int) string {
	var b strings.Builder
	n := r.opts.Explain
	for i := range r.events {
		if ev := &r.events[i]; ev.Line >= line-n && ev.Line <= line+n {
			mark := "  "
			if ev.Line == line {
				mark = "> "
			}
			fmt.Fprintf(&b, "    %s%d: %s\n", mark, ev.Line, ev.Text)
		}
	}
	if t == nil || !t.bound {
		return b.String()
	}
	fmt.Fprintf(&b, "    model: %s\n", r.view(t))
	return b.String()
}

// view describes the model's task bound to t: its pid, parent, group, session, nice value
// and state, pids named as the trace names them.
func (r *replayer) view(t *task) string {
	u := r.b.Task(t.ref)
	ns := u.Namespace()
	state := "running"
	switch {
	case u.Exited():
		state = "exited"
	case u.Stopped():
		state = "stopped"
	case u.Sleeping():
		state = "asleep in a call"
	}
	id := func(pid int) string { return r.modelIdentity(t.ref, pid) }
	return fmt.Sprintf("%s is pid %d, %s; parent %s, group %s, session %s, nice %d",
		t.name(), u.Gettid(), state, id(u.Getppid()), id(u.Getpgrp()), id(u.ThreadGroup().SessionID(ns)), u.Nice())
}
