package scenario

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

type closeFailer struct{ *fakeBackend }

func (closeFailer) Close() error { return errors.New("leftover tasks") }

func TestRunSource(t *testing.T) {
	var fb *fakeBackend
	newFake := func() (Backend, error) { fb = newFakeBackend(); return fb, nil }
	tests := []struct {
		name       string
		src        string
		newBackend func() (Backend, error)
		status     int
		out, err   string
	}{
		{"good", "A = init.fork() == A\n", newFake, 0, "1: A = init.fork() = A\n", ""},
		{"expectation fails", "A = init.fork() == B\n", newFake, 1, "1: A = init.fork() = A\n", ""},
		{"parse error", "A = init.fork()\nA.frok()\n", newFake, 0, "", "f.scn:2:3: unknown call frok"},
		{"no backend", "A = init.fork() == A\n", func() (Backend, error) { return nil, errors.New("no namespaces") },
			0, "", "f.scn: cannot run: no namespaces"},
		{"close fails", "A = init.fork() == A\n", func() (Backend, error) { return closeFailer{newFakeBackend()}, nil },
			0, "1: A = init.fork() = A\n", "f.scn: leftover tasks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb = nil
			var out bytes.Buffer
			status, err := RunSource("f.scn", []byte(tt.src), tt.newBackend, &out, io.Discard)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if status != tt.status || out.String() != tt.out || gotErr != tt.err {
				t.Errorf("status %d, stdout %q, error %q; want %d, %q, %q",
					status, out.String(), gotErr, tt.status, tt.out, tt.err)
			}
			if fb != nil && !fb.closed {
				t.Error("backend not closed")
			}
		})
	}
}

func TestRunFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.scn", "A = init.fork() == A\n")
	failing := write("failing.scn", "A = init.fork() == B\n")
	bad := write("bad.scn", "A = init.fork()\nA.frok()\n")
	newFake := func() (Backend, error) { return newFakeBackend(), nil }
	tests := []struct {
		path     string
		status   int
		out, err string
	}{
		{good, 0, "1: A = init.fork() = A\n", ""},
		{failing, 1, "1: A = init.fork() = A\n", failing + ":1: expected B, got A\n"},
		{bad, 2, "", bad + ":2:3: unknown call frok\n"},
		{filepath.Join(dir, "missing.scn"), 2, "", "open " + filepath.Join(dir, "missing.scn") + ": no such file or directory\n"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		if status := RunFile(tt.path, newFake, &out, &errOut); status != tt.status || out.String() != tt.out || errOut.String() != tt.err {
			t.Errorf("RunFile(%s): status %d, stdout %q, stderr %q; want %d, %q, %q",
				tt.path, status, out.String(), errOut.String(), tt.status, tt.out, tt.err)
		}
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.scn")
	if err := os.WriteFile(path, []byte("init.getpid()\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	name, src, err := ReadFile(path, nil)
	if name != path || string(src) != "init.getpid()\n" || err != nil {
		t.Errorf("ReadFile(%s) = %q, %q, %v", path, name, src, err)
	}
	name, src, err = ReadFile("-", strings.NewReader("init.fork()\n"))
	if name != StdinName || string(src) != "init.fork()\n" || err != nil {
		t.Errorf("ReadFile(-) = %q, %q, %v", name, src, err)
	}
	if _, _, err := ReadFile(filepath.Join(dir, "missing.scn"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, _, err := ReadFile("-", iotest.ErrReader(errors.New("broken pipe"))); err == nil ||
		err.Error() != "<stdin>: broken pipe" {
		t.Errorf("failing stdin: %v", err)
	}
	// One byte over the limit is refused, from a file or a stream that never ends, after
	// reading no more than that byte.
	big := filepath.Join(dir, "big.scn")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxFileSize+1); err != nil { // sparse: nothing written to disk
		t.Fatal(err)
	}
	if _, _, err := ReadFile(big, nil); err == nil || err.Error() != big+": larger than 64 MiB, the limit for a scenario" {
		t.Errorf("big file: %v", err)
	}
	endless := &countingReader{}
	if _, _, err := ReadFile("-", endless); err == nil || err.Error() != "<stdin>: larger than 64 MiB, the limit for a scenario" {
		t.Errorf("endless stdin: %v", err)
	}
	if endless.n != MaxFileSize+1 {
		t.Errorf("read %d bytes of an endless stream, want %d", endless.n, MaxFileSize+1)
	}
	if err := os.Truncate(big, MaxFileSize); err != nil {
		t.Fatal(err)
	}
	if _, src, err := ReadFile(big, nil); len(src) != MaxFileSize || err != nil {
		t.Errorf("file at the limit: %d bytes, %v", len(src), err)
	}
}

// countingReader is an endless stream of zeros that counts what it hands out.
type countingReader struct{ n int }

func (r *countingReader) Read(p []byte) (int, error) {
	clear(p)
	r.n += len(p)
	return len(p), nil
}
