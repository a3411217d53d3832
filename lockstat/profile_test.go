package lockstat

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestStartProfiles(t *testing.T) {
	dir := t.TempDir()
	mutexPath, blockPath := filepath.Join(dir, "mutex.pprof"), filepath.Join(dir, "block.pprof")
	stop, err := StartProfiles(mutexPath, blockPath)
	if err != nil {
		t.Fatal(err)
	}
	var m Mutex
	m.Init(NewClass("profiled"), 1)
	m.Lock()
	done := blockWaiters(t, 1, "sync.Mutex.Lock", m.Lock, m.Unlock)
	time.Sleep(time.Millisecond)
	m.Unlock()
	done()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if rate := runtime.SetMutexProfileFraction(-1); rate != 0 {
		t.Errorf("mutex profile rate %d after stop, want 0", rate)
	}

	// The profiles are gzipped protocol buffers whose string tables name
	// the functions on the recorded stacks.
	for _, path := range []string{mutexPath, blockPath} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		data, err := io.ReadAll(zr)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !bytes.Contains(data, []byte("lockstat.TestStartProfiles")) {
			t.Errorf("%s does not record the contention in TestStartProfiles", path)
		}
	}
}

func TestStartProfilesBadPath(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "mutex.pprof")
	if _, err := StartProfiles(good, filepath.Join(dir, "missing", "block.pprof")); err == nil {
		t.Fatal("StartProfiles with a path in a missing directory succeeded")
	}
	if _, err := os.Stat(good); !os.IsNotExist(err) {
		t.Errorf("the mutex profile's file was left behind: %v", err)
	}
	if rate := runtime.SetMutexProfileFraction(-1); rate != 0 {
		t.Errorf("mutex profile rate %d after a failed start, want 0", rate)
	}
}
