// Package cbuild compiles a C program that is embedded in tasklist with
// the host's C compiler, once, into the user's cache directory. The
// scenario runner's agent and the benchmark's host program are built this
// way, so that a plain `go run` needs nothing installed but a C compiler.
package cbuild

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNoCompiler is returned by Binary when no C compiler is found.
var ErrNoCompiler = errors.New("no C compiler found (cc or gcc, or $CC)")

// Binary returns the path of the program name compiled from source with
// the compiler flags, compiling it on first use. The file name carries a
// hash of the source and the flags, so an edited program is rebuilt and
// concurrent users agree on what they run; the build goes to a private
// directory and is renamed into place, so nobody runs a half-written
// binary. Errors: ErrNoCompiler, or the compiler's own messages.
func Binary(name string, source []byte, flags ...string) (string, error) {
	h := sha256.New()
	h.Write(source)
	for _, f := range flags {
		h.Write([]byte{0})
		h.Write([]byte(f))
	}
	dir, err := os.UserCacheDir()
	if err != nil || os.MkdirAll(filepath.Join(dir, "tasklist"), 0o755) != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "tasklist")
	path := filepath.Join(dir, name+"-"+hex.EncodeToString(h.Sum(nil)[:8]))
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
	src := filepath.Join(tmp, name+".c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(tmp, name)
	cmd := exec.Command(cc, append(append([]string{}, flags...), "-o", out, src)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("compiling %s with %s: %v\n%s", name, cc, err, strings.TrimSpace(stderr.String()))
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
