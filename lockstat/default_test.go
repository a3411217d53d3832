package lockstat

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCheckingByDefault: checking starts on in tasklist's own tests, off in
// another module's tests and in programs, and TASKLIST_LOCKCHECK overrides
// both ways.
func TestCheckingByDefault(t *testing.T) {
	const pkg = "tasklist/lockstat"
	for _, tc := range []struct {
		inTest          bool
		env, mainModule string
		want            bool
	}{
		{true, "", "tasklist", true},
		{true, "0", "tasklist", false},
		{true, "", "example.com/sandbox", false},
		{true, "1", "example.com/sandbox", true},
		{true, "", "tasklistx", false}, // a module whose path only starts the same
		{true, "", "", false},
		{false, "", "tasklist", false},
		{false, "1", "tasklist", true},
		{true, "yes", "example.com/sandbox", false},
	} {
		if got := checkingByDefault(tc.inTest, tc.env, tc.mainModule, pkg); got != tc.want {
			t.Errorf("checkingByDefault(%v, %q, %q) = %v, want %v", tc.inTest, tc.env, tc.mainModule, got, tc.want)
		}
	}
	if os.Getenv("TASKLIST_LOCKCHECK") == "" && !checkingByDefault(true, "", "tasklist", pkg) {
		t.Error("checking is off in tasklist's own tests")
	}
}

// TestCheckingInAnEmbeddingModule builds the tests of a module that
// requires tasklist and reads Checking in them: off, and on under
// TASKLIST_LOCKCHECK=1.
func TestCheckingInAnEmbeddingModule(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	if testing.Short() {
		t.Skip("builds a module")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/sandbox\n\ngo 1.26\n\nrequire tasklist v0.0.0\n\nreplace tasklist => " + root + "\n",
		"sandbox_test.go": `package sandbox

import (
	"os"
	"testing"

	"tasklist/lockstat"
)

func TestChecking(t *testing.T) {
	if got, want := lockstat.Checking(), os.Getenv("TASKLIST_LOCKCHECK") == "1"; got != want {
		t.Fatalf("lockstat.Checking() = %v with TASKLIST_LOCKCHECK=%q", got, os.Getenv("TASKLIST_LOCKCHECK"))
	}
}
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, env := range []string{"", "1"} {
		cmd := exec.Command(goTool, "test", "-count=1", ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TASKLIST_LOCKCHECK="+env, "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Errorf("TASKLIST_LOCKCHECK=%q: %v\n%s", env, err, out.String())
		}
	}
}
