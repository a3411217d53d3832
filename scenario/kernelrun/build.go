package kernelrun

import (
	_ "embed"
	"errors"
	"fmt"
	"runtime"

	"tasklist/internal/cbuild"
)

//go:embed agent/agent.c
var agentSource []byte

// ErrNoCompiler is returned by New when no C compiler is found to build the agent.
var ErrNoCompiler = errors.New("tasklist run --kernel: needs a C compiler (cc or gcc, or $CC) to build its agent")

// agentBinary returns the path of the compiled agent, compiling it into the user's cache
// directory on first use (package cbuild).
func agentBinary() (string, error) {
	if runtime.GOARCH != "amd64" {
		return "", fmt.Errorf("tasklist run --kernel: the agent supports only amd64, not %s", runtime.GOARCH)
	}
	// No stack protector: its canary lives in the thread pointer's block, which raw clones
	// share without glibc's consent.
	path, err := cbuild.Binary("agent", agentSource, append([]string{"-O2", "-fno-stack-protector"}, agentDefines()...)...)
	switch {
	case errors.Is(err, cbuild.ErrNoCompiler):
		return "", ErrNoCompiler
	case err != nil:
		return "", fmt.Errorf("tasklist run --kernel: %w", err)
	}
	return path, nil
}
