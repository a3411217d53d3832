package cbuild

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func needCompiler(t *testing.T) {
	if findCompiler() == "" {
		t.Skip("no C compiler")
	}
}

// TestBinaryBuildsOnceAndRuns: the first call compiles, the program runs,
// and a second call reuses the same file; other flags give another file.
func TestBinaryBuildsOnceAndRuns(t *testing.T) {
	needCompiler(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	src := []byte("#include <stdio.h>\nint main(void) { puts(\"built\"); return 0; }\n")
	path, err := Binary("hello", src, "-O1")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path).Output()
	if err != nil || strings.TrimSpace(string(out)) != "built" {
		t.Fatalf("running %s: %q, %v", path, out, err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Binary("hello", src, "-O1")
	if err != nil || again != path {
		t.Fatalf("second call: %q, %v; want %q", again, err, path)
	}
	if after, _ := os.Stat(path); !after.ModTime().Equal(before.ModTime()) {
		t.Fatal("the second call rebuilt the program")
	}
	if other, err := Binary("hello", src, "-O0"); err != nil || other == path {
		t.Fatalf("other flags: %q, %v; want a new file", other, err)
	}
}

// TestBinaryReportsCompilerErrors: a program that does not compile gives
// the compiler's message.
func TestBinaryReportsCompilerErrors(t *testing.T) {
	needCompiler(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	_, err := Binary("broken", []byte("int main(void) { return undeclared; }\n"))
	if err == nil || !strings.Contains(err.Error(), "undeclared") {
		t.Fatalf("err = %v, want the compiler's message", err)
	}
}

// TestBinaryNoCompiler: without a compiler the error is ErrNoCompiler.
func TestBinaryNoCompiler(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CC", "")
	if _, err := Binary("none", []byte("int main(void) { return 0; }\n")); !errors.Is(err, ErrNoCompiler) {
		t.Fatalf("err = %v, want ErrNoCompiler", err)
	}
}
