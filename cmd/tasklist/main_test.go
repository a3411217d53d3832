package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"tasklist/internal/scengen"
	"tasklist/scenario"
)

// tasklist runs the command line args and returns what it printed and its status.
func tasklist(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	var out, errs bytes.Buffer
	status = run(context.Background(), args, &out, &errs)
	return out.String(), errs.String(), status
}

// writeScenario writes src to a file in a fresh directory and returns its path.
func writeScenario(t *testing.T, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.scn")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTopLevelHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"help", "help"}} {
		out, errs, status := tasklist(t, args...)
		if status != 0 || errs != "" || !strings.Contains(out, "usage: tasklist COMMAND") {
			t.Errorf("%q: status %d, stdout %q, stderr %q", args, status, out, errs)
		}
		for _, c := range commands {
			if !strings.Contains(out, "\n  "+c.name+" ") {
				t.Errorf("%q does not list %s:\n%s", args, c.name, out)
			}
		}
	}
	out, errs, status := tasklist(t)
	if status != 2 || out != "" || !strings.Contains(errs, "usage: tasklist COMMAND") {
		t.Errorf("no arguments: status %d, stdout %q, stderr %q", status, out, errs)
	}
}

// TestCommandHelp checks that every command, whatever its flags, answers -h, --help and
// `tasklist help NAME` on standard output with its usage line, and lists its flags.
func TestCommandHelp(t *testing.T) {
	for _, c := range commands {
		want := "usage: " + c.synopsis() + "\n"
		var helps []string
		for _, args := range [][]string{{c.name, "-h"}, {c.name, "--help"}, {c.name, "-help"}, {"help", c.name}} {
			out, errs, status := tasklist(t, args...)
			if status != 0 || errs != "" || !strings.HasPrefix(out, want) {
				t.Errorf("%q: status %d, stderr %q, stdout:\n%s", args, status, errs, out)
			}
			helps = append(helps, out)
		}
		for _, h := range helps[1:] {
			if h != helps[0] {
				t.Errorf("%s: help texts differ:\n%s\n---\n%s", c.name, helps[0], h)
			}
		}
		fs := c.flagSet()
		c.setup(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(helps[0], "  -"+f.Name) || !strings.Contains(helps[0], f.Usage) {
				t.Errorf("%s's help does not describe -%s:\n%s", c.name, f.Name, helps[0])
			}
		})
	}
	out, _, _ := tasklist(t, "help", "run")
	if !strings.HasPrefix(out, "usage: tasklist run [flags] FILE\n") || !strings.Contains(out, "-kernel") {
		t.Errorf("help run:\n%s", out)
	}
}

func TestUnknownCommand(t *testing.T) {
	tests := []struct{ args, want string }{
		{"rnu", `tasklist: unknown command "rnu"; did you mean run?`},
		{"dif", `tasklist: unknown command "dif"; did you mean diff?`},
		{"Run", `tasklist: unknown command "Run"; did you mean run?`},
		{"verison", `tasklist: unknown command "verison"; did you mean version?`},
		{"hepl", `tasklist: unknown command "hepl"; did you mean help?`},
		{"help rnu", `tasklist: unknown command "rnu"; did you mean run?`},
		{"x", `tasklist: unknown command "x"`},
		{"benchmark", `tasklist: unknown command "benchmark"`},
	}
	for _, tt := range tests {
		out, errs, status := tasklist(t, strings.Fields(tt.args)...)
		if first, _, _ := strings.Cut(errs, "\n"); status != 2 || out != "" || first != tt.want {
			t.Errorf("%s: status %d, stdout %q, stderr %q; want first line %q", tt.args, status, out, errs, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"run", "run", 0}, {"", "run", 3}, {"rnu", "run", 1}, {"urn", "run", 1},
		{"rn", "run", 1}, {"runn", "run", 1}, {"ran", "run", 1}, {"diff", "dfif", 1},
		{"version", "verison", 1}, {"kitten", "sitting", 3}, {"ca", "abc", 3},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestRunCommand(t *testing.T) {
	good := writeScenario(t, "A = init.fork() == A\nA.getppid() == init\n")
	failing := writeScenario(t, "A = init.fork() == init\n")
	bad := writeScenario(t, "init.frok()\n")
	const goodOut = "1: A = init.fork() = A\n2: A.getppid() = init\n"
	tests := []struct {
		name       string
		args       []string
		status     int
		out, errs  string
		errsPrefix bool // errs is only the beginning of stderr
	}{
		{"good", []string{"run", good}, 0, goodOut, "", false},
		{"expectation fails", []string{"run", failing}, 1, "1: A = init.fork() = A\n",
			failing + ":1: expected init, got A\n", false},
		{"parse error keeps the editor's form", []string{"run", bad}, 2, "", bad + ":1:6: unknown call frok\n", false},
		{"missing file", []string{"run", "/nonexistent/x.scn"}, 2, "",
			"tasklist: open /nonexistent/x.scn: no such file or directory\n", false},
		{"endless file", []string{"run", "/dev/zero"}, 2, "",
			"tasklist: /dev/zero: larger than 64 MiB, the limit for a scenario\n", false},
		{"no file", []string{"run"}, 2, "", "tasklist: run: missing FILE\nusage: tasklist run [flags] FILE\n", true},
		{"two files", []string{"run", good, bad}, 2, "", "tasklist: run: unexpected argument \"" + bad + "\"\n", true},
		{"unknown flag after FILE", []string{"run", good, "--kernal"}, 2, "",
			"tasklist: run: flag provided but not defined: -kernal\n", true},
		{"help after FILE", []string{"run", good, "-h"}, 0, "usage: tasklist run [flags] FILE\n", "", true},
		{"flag value after FILE", []string{"run", good, "--kernel=maybe"}, 2, "",
			"tasklist: run: invalid boolean value \"maybe\" for -kernel: parse error\n", true},
		{"dash dash", []string{"run", "--", "-h"}, 2, "", "tasklist: open -h: no such file or directory\n", false},
		{"stall not positive", []string{"run", "--kernel", "--stall", "-1s", good}, 2, "",
			"tasklist: run: --stall -1s: the stall timeout must be positive\n", false},
		{"unsafe with nothing unsafe", []string{"run", "--unsafe", "--plan", "linux-2.6.35", good}, 2, "",
			"tasklist: --unsafe: plan linux-2.6.35 has no unsafe toggle to allow (tasklist plans lists them)\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, status := tasklist(t, tt.args...)
			outOK := out == tt.out || (tt.errsPrefix && tt.status == 0 && strings.HasPrefix(out, tt.out))
			errsOK := errs == tt.errs || (tt.errsPrefix && strings.HasPrefix(errs, tt.errs))
			if status != tt.status || !outOK || !errsOK {
				t.Errorf("status %d, stdout %q, stderr %q; want %d, %q, %q", status, out, errs, tt.status, tt.out, tt.errs)
			}
		})
	}
}

// withStdin runs f with standard input reading src.
func withStdin(t *testing.T, src string, f func()) {
	t.Helper()
	in, err := os.Open(writeScenario(t, src))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	old := os.Stdin
	os.Stdin = in
	defer func() { os.Stdin = old }()
	f()
}

func TestRunStdin(t *testing.T) {
	withStdin(t, "init.getpid() == init\ninit.frok()\n", func() {
		_, errs, status := tasklist(t, "run", "-")
		if status != 2 || errs != "<stdin>:2:6: unknown call frok\n" {
			t.Errorf("status %d, stderr %q", status, errs)
		}
	})
	withStdin(t, "init.getpid() == 2\n", func() {
		out, errs, status := tasklist(t, "run", "-")
		if status != 1 || out != "1: init.getpid() = init\n" || errs != "<stdin>:1: expected 2, got init\n" {
			t.Errorf("status %d, stdout %q, stderr %q", status, out, errs)
		}
	})
}

// TestDiffCommand checks what diff decides before it runs anything on the kernel.
func TestDiffCommand(t *testing.T) {
	bad := writeScenario(t, "init.getpid()\ninit.frok()\n")
	tests := []struct {
		name   string
		args   []string
		status int
		errs   string
	}{
		{"no file", []string{"diff"}, 2, "tasklist: diff: missing FILE...\nusage: tasklist diff [flags] FILE...\n" +
			"Run 'tasklist help diff' for details.\n"},
		{"stdin twice", []string{"diff", "-", "-"}, 2,
			"tasklist: diff: standard input (-) is named 2 times; it can be read once\n"},
		{"errors in every file", []string{"diff", bad, "/nonexistent/x.scn", "/dev/zero"}, 2,
			bad + ":2:6: unknown call frok\ntasklist: open /nonexistent/x.scn: no such file or directory\n" +
				"tasklist: /dev/zero: larger than 64 MiB, the limit for a scenario\n"},
		{"stall not positive", []string{"diff", "--stall=0", bad}, 2,
			"tasklist: diff: --stall 0s: the stall timeout must be positive\n"},
		{"unknown flag", []string{"diff", bad, "-x"}, 2, "tasklist: diff: flag provided but not defined: -x\n" +
			"usage: tasklist diff [flags] FILE...\nRun 'tasklist help diff' for details.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, status := tasklist(t, tt.args...)
			if status != tt.status || out != "" || errs != tt.errs {
				t.Errorf("status %d, stdout %q, stderr %q; want %d, %q", status, out, errs, tt.status, tt.errs)
			}
		})
	}
	withStdin(t, "init.frok()\n", func() {
		if _, errs, status := tasklist(t, "diff", "-"); status != 2 || errs != "<stdin>:1:6: unknown call frok\n" {
			t.Errorf("diff -: status %d, stderr %q", status, errs)
		}
	})
}

func TestVersion(t *testing.T) {
	out, errs, status := tasklist(t, "version")
	if status != 0 || errs != "" || !strings.HasPrefix(out, "tasklist ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("status %d, stdout %q, stderr %q", status, out, errs)
	}
	if _, errs, status := tasklist(t, "version", "extra"); status != 2 || !strings.HasPrefix(errs, "tasklist: version: unexpected argument \"extra\"\n") {
		t.Errorf("version extra: status %d, stderr %q", status, errs)
	}
	info := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	platform := " " + runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{info, true, "tasklist v1.2.3 commit 0123456789ab with changes go1.99" + platform},
		{&debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "(devel)"}}, true, "tasklist (devel) go1.99" + platform},
		{nil, false, "tasklist (unknown) " + runtime.Version() + platform},
	}
	for _, tt := range tests {
		if got := versionLine(tt.info, tt.ok); got != tt.want {
			t.Errorf("versionLine = %q, want %q", got, tt.want)
		}
	}
}

// TestLostOutput: with standard output on /dev/full every command that
// prints says so on standard error and exits 2, whatever it did.
func TestLostOutput(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full")
	}
	defer full.Close()
	good := writeScenario(t, "A = init.fork() == A\n")
	failing := writeScenario(t, "A = init.fork() == init\n")
	for _, args := range [][]string{
		{"run", good},
		{"run", failing},
		{"bench", "--workloads", "get", "--plans", "scalable", "--workers", "1", "--reps", "1", "--duration", "3ms", "--out", ""},
		{"bench", "--format", "json", "--workloads", "get", "--plans", "scalable", "--workers", "1", "--reps", "1",
			"--duration", "3ms", "--out", ""},
		{"check", "--duration", "1ns", "--seed", "3"},
		{"plans"},
		{"version"},
		{"help"},
		{"run", "-h"},
	} {
		var errs bytes.Buffer
		status := run(context.Background(), args, full, &errs)
		if status != 2 || !strings.Contains(errs.String(), "tasklist: writing standard output: write /dev/full: no space left on device") {
			t.Errorf("%q: status %d, stderr %q", args, status, errs.String())
		}
	}
}

// TestGen: gen writes the files of consecutive seeds, each a scenario
// that parses and the same for the same seed, and refuses bad flags.
func TestGen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gen")
	out, errs, status := tasklist(t, "gen", "--area", "sem", "--n", "3", "--seed", "7", "--out", dir)
	if status != 0 || out != "" || errs != "" {
		t.Fatalf("status %d, stdout %q, stderr %q", status, out, errs)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	want := []string{"sem-7.scn", "sem-8.scn", "sem-9.scn"}
	if len(names) != len(want) {
		t.Fatalf("wrote %v, want %v", names, want)
	}
	for i, name := range names {
		src, err := os.ReadFile(name)
		if filepath.Base(name) != want[i] || err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := scenario.Parse(name, src); err != nil {
			t.Error(err)
		}
		again, _ := scengen.Generate("sem", uint64(7+i))
		if string(src) != again {
			t.Errorf("%s is not the scenario of its seed", name)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gen", "--area", "nosuch"}, "tasklist: gen: unknown area \"nosuch\" (areas: exec, wait, creds, sem, mixed, killrace, pidfd)\n"},
		{[]string{"gen", "--n", "0"}, "tasklist: gen: --n 0: want 1 or more\n"},
		{[]string{"gen", "--n", "-1"}, "tasklist: gen: --n -1: want 1 or more\n"},
		{[]string{"gen", "--out", "/dev/full/x", "--n", "1"}, "tasklist: gen: mkdir /dev/full: not a directory\n"},
	} {
		if out, errs, status := tasklist(t, tc.args...); status != 2 || out != "" || errs != tc.want {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want %q", tc.args, status, out, errs, tc.want)
		}
	}
}

// TestPackageDocListsEveryCommand: the command's documentation names each
// command the dispatcher knows.
func TestPackageDocListsEveryCommand(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, _, _ := strings.Cut(string(src), "package main")
	for _, name := range append(commandNames(), "help") {
		if !strings.Contains(doc, "//\ttasklist "+name) {
			t.Errorf("the package comment does not list %s", name)
		}
	}
}
