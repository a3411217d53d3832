package lockstat

import (
	"errors"
	"os"
	"runtime"
	"runtime/pprof"
)

// StartProfiles turns on Go's mutex profile, if mutexPath is not empty, and
// its block profile, if blockPath is not empty, both recording every event,
// and returns a function that writes each profile to its file in pprof's
// format, restores the mutex profile's previous rate and turns block
// profiling off. Call stop once. The files are created at once, so a bad
// path is reported before anything is turned on.
//
// The profiles complement the statistics: they name the call sites rather
// than the lock classes. The mutex profile charges each delay on a
// sync.Mutex or sync.RWMutex (those inside this package's locks included)
// to the stack that released the lock late; the block profile charges the
// time goroutines spent blocked, on locks but also on channels, selects and
// condition variables, to the blocked stack. Both are cumulative for the
// process: a profile also holds the events of any earlier period during
// which that profiling was on. Recording every event costs a stack trace
// per contended release or blocking call.
func StartProfiles(mutexPath, blockPath string) (stop func() error, err error) {
	type output struct {
		profile string
		file    *os.File
	}
	var outs []output
	for _, p := range []struct{ profile, path string }{{"mutex", mutexPath}, {"block", blockPath}} {
		if p.path == "" {
			continue
		}
		f, err := os.Create(p.path)
		if err != nil {
			for _, o := range outs {
				o.file.Close()
				os.Remove(o.file.Name())
			}
			return nil, err
		}
		outs = append(outs, output{p.profile, f})
	}
	var prevFraction int
	if mutexPath != "" {
		prevFraction = runtime.SetMutexProfileFraction(1)
	}
	if blockPath != "" {
		runtime.SetBlockProfileRate(1)
	}
	return func() error {
		if mutexPath != "" {
			runtime.SetMutexProfileFraction(prevFraction)
		}
		if blockPath != "" {
			runtime.SetBlockProfileRate(0)
		}
		var errs []error
		for _, o := range outs {
			errs = append(errs, pprof.Lookup(o.profile).WriteTo(o.file, 0), o.file.Close())
		}
		return errors.Join(errs...)
	}, nil
}
