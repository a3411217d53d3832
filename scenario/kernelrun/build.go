package kernelrun

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

//go:embed agent/agent.c
var agentSource []byte

// ErrNoCompiler is returned by New when no C compiler is found to build the agent.
var ErrNoCompiler = errors.New("tasklist run --kernel: needs a C compiler (cc or gcc, or $CC) to build its agent")

// agentBinary returns the path of the compiled agent, compiling it into the user's cache
// directory on first use. The file name carries the source's hash, so an edited agent is
// rebuilt and concurrent runners agree on what they run.
func agentBinary() (string, error) {
	if runtime.GOARCH != "amd64" {
		return "", fmt.Errorf("tasklist run --kernel: the agent supports only amd64, not %s", runtime.GOARCH)
	}
	sum := sha256.Sum256(agentSource)
	dir, err := os.UserCacheDir()
	if err != nil || os.MkdirAll(filepath.Join(dir, "tasklist"), 0o755) != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "tasklist")
	path := filepath.Join(dir, "agent-"+hex.EncodeToString(sum[:8]))
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Mode()&0o100 != 0 {
		return path, nil
	}
	cc := findCompiler()
	if cc == "" {
		return "", ErrNoCompiler
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "agent.c")
	if err := os.WriteFile(src, agentSource, 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(tmp, "agent")
	// No stack protector: its canary lives in the thread pointer's block, which raw clones
	// share without glibc's consent.
	cmd := exec.Command(cc, "-O2", "-fno-stack-protector", "-o", out, src)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("tasklist run --kernel: compiling the agent with %s: %v\n%s", cc, err, strings.TrimSpace(stderr.String()))
	}
	if err := os.Rename(out, path); err != nil {
		return "", err
	}
	return path, nil
}

func findCompiler() string {
	for _, name := range []string{os.Getenv("CC"), "cc", "gcc"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}
