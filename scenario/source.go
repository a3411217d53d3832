package scenario

import (
	"fmt"
	"io"
	"os"
)

// MaxFileSize is the largest scenario ReadFile accepts: 64 MiB, far beyond any file written by
// hand or generated for a test, and small enough that a mistaken path (/dev/zero, a disk image)
// is refused at once instead of filling memory.
const MaxFileSize = 64 << 20

// StdinName is the name ReadFile gives standard input, which positions in messages show.
const StdinName = "<stdin>"

// ReadFile reads the scenario at path, or stdin when path is "-", and returns the name that
// positions in messages use for it with its text. It fails, having read no more than one byte
// past the limit, when the scenario is larger than MaxFileSize.
func ReadFile(path string, stdin io.Reader) (name string, src []byte, err error) {
	name, r := path, stdin
	if path == "-" {
		name = StdinName
	} else {
		f, err := os.Open(path)
		if err != nil {
			return "", nil, err
		}
		defer f.Close()
		r = f
	}
	src, err = io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		if path == "-" {
			err = fmt.Errorf("%s: %w", name, err) // a file's read error names its path already
		}
		return "", nil, err
	}
	if len(src) > MaxFileSize {
		return "", nil, fmt.Errorf("%s: larger than %d MiB, the limit for a scenario", name, MaxFileSize>>20)
	}
	return name, src, nil
}

// NewBackend makes a fresh Backend for one run.
type NewBackend func() (Backend, error)

// ExecSource parses src, the scenario called name, makes a Backend with newBackend, runs the
// scenario on it, handing each outcome to each as soon as it is known (see [Outcomes]), and
// closes the Backend. It fails when src does not parse (an *Error; nothing has run) or the
// Backend cannot be made or closed (after handing over what ran). A run that ended because the
// Backend could not tell what a call did is no failure here: its last outcome says so.
func ExecSource(name string, src []byte, newBackend NewBackend, each func(Outcome)) error {
	s, err := Parse(name, src)
	if err != nil {
		return err
	}
	b, err := newBackend()
	if err != nil {
		return fmt.Errorf("%s: cannot run: %w", name, err)
	}
	for o := range Outcomes(s, b) {
		each(o)
	}
	if err := b.Close(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// RunSource runs src, the scenario called name, with ExecSource and prints each outcome as it
// comes, as Run does. It returns Run's status: 0 when every expectation held, 1 when one failed,
// 2 when the Backend could not tell what a call did (said on stderr; the run stopped there). It
// returns an error instead, after printing what ran, when src does not parse (an *Error) or the
// Backend cannot be made or closed; the contract's exit status is then 2.
func RunSource(name string, src []byte, newBackend NewBackend, stdout, stderr io.Writer) (int, error) {
	p := printer{stdout: stdout, stderr: stderr}
	if err := ExecSource(name, src, newBackend, p.print); err != nil {
		return 0, err
	}
	return p.status, nil
}

// RunFile reads the scenario at path (standard input for "-") with ReadFile, and runs it with
// RunSource. It returns the exit status of the contract: 0 when every expectation held, 1 when
// one failed, 2 when the scenario cannot be read or parsed or the Backend cannot be made or
// closed, each said in one line on stderr.
func RunFile(path string, newBackend NewBackend, stdout, stderr io.Writer) int {
	name, src, err := ReadFile(path, os.Stdin)
	if err == nil {
		var status int
		if status, err = RunSource(name, src, newBackend, stdout, stderr); err == nil {
			return status
		}
	}
	fmt.Fprintln(stderr, err)
	return 2
}
