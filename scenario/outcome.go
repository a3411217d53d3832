package scenario

import (
	"fmt"
	"io"
)

// Outcome is what one statement of a run produced: the result it printed, an expectation that
// did not hold, or why it could not run. A background call has no outcome when it starts: its
// result is the outcome of its join, which names the join's line and source.
//
// Exactly one of three holds: Skipped is set (the statement did not run: a name it uses names
// nothing); Result.Kind is ResultFatal (the Backend could not tell what the call did, and the
// run ends with this outcome); or Text holds the printed result.
type Outcome struct {
	File   string // the scenario's name, as positions show it
	Line   int    // the statement's line
	Source string // the statement as written, without its == EXPECT part
	Call   string // the call's name; for a join, that of the background call it waits for
	// Result is what the Backend reported: in kernel terms, before names are put on pids. It is
	// the zero Result when the statement did not run.
	Result Result
	// Text is Result as the contract spells it, the RESULT of "LINE: SOURCE = RESULT"; "" when
	// nothing was printed.
	Text string
	// Mismatches are the expectations Text did not meet: the call's own, then its join's.
	Mismatches []Mismatch
	// Skipped says why the statement could not run; nil when it ran.
	Skipped *Error
}

// Mismatch is an expectation that did not hold.
type Mismatch struct {
	Line   int    // the line of the statement that wrote it
	Expect string // the text after ==, as written
}

// Printed reports whether the outcome printed a result line.
func (o Outcome) Printed() bool { return o.Skipped == nil && o.Result.Kind != ResultFatal }

// Status is the exit status the outcome gives its run under the contract: 0 when it ran as
// expected, 1 when an expectation failed or the statement could not run, 2 when the Backend could
// not tell what the call did.
func (o Outcome) Status() int {
	switch {
	case o.Result.Kind == ResultFatal:
		return statusFatal
	case o.Skipped != nil || len(o.Mismatches) > 0:
		return 1
	}
	return 0
}

// statusFatal is the status of a run that ended because a Backend could not tell what a call did.
const statusFatal = 2

// FatalError returns, for an outcome whose Backend could not tell what the call did, the error
// that ended the run, as "FILE:LINE: why"; nil for any other outcome.
func (o Outcome) FatalError() error {
	if o.Result.Kind != ResultFatal {
		return nil
	}
	return fmt.Errorf("%s:%d: %w", o.File, o.Line, o.Result.Err)
}

// Print writes the outcome as the contract shows it: "LINE: SOURCE = RESULT" on stdout for a
// result, then each failed expectation as "FILE:LINE: expected X, got Y" on stderr; a statement
// that could not run as "FILE:LINE:COL: message" on stderr; the end of a run whose Backend could
// not tell what a call did as "FILE:LINE: why" on stderr.
func (o Outcome) Print(stdout, stderr io.Writer) {
	switch {
	case o.Skipped != nil:
		fmt.Fprintln(stderr, o.Skipped)
	case o.Result.Kind == ResultFatal:
		fmt.Fprintln(stderr, o.FatalError())
	default:
		fmt.Fprintf(stdout, "%d: %s = %s\n", o.Line, o.Source, o.Text)
		for _, m := range o.Mismatches {
			fmt.Fprintf(stderr, "%s:%d: expected %s, got %s\n", o.File, m.Line, m.Expect, o.Text)
		}
	}
}
