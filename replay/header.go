package replay

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
)

// Header is what a trace's comment lines say about the process that ran the traced command:
// the state the traced root starts from. Each field is set only when the header has it.
type Header struct {
	Command string
	Kernel  string
	Nice    *int
	// UIDs and GIDs are the real, effective and saved ids.
	UIDs, GIDs *[3]int
	// CapEffective and CapPermitted are capability sets, as /proc/PID/status shows them.
	CapEffective, CapPermitted *uint64
	// Limits holds the resource limits by RLIMIT_* number.
	Limits map[int][2]uint64
}

// add reads one comment line. Comments that are not header lines are ignored, so that a
// trace may carry notes of its own.
func (h *Header) add(line string) error {
	body := strings.TrimSpace(strings.TrimPrefix(line, "#"))
	if cmd, ok := strings.CutPrefix(line, headerMagic+": "); ok {
		h.Command = cmd
		return nil
	}
	key, value, ok := strings.Cut(body, ": ")
	if !ok {
		return nil
	}
	fields := strings.Fields(value)
	switch key {
	case headerKernel:
		h.Kernel = value
	case headerNice:
		n, err := strconv.Atoi(value)
		if err != nil || n < -20 || n > 19 {
			return fmt.Errorf("header: bad nice value %q", value)
		}
		h.Nice = &n
	case headerUIDs, headerGIDs:
		var ids [3]int
		if len(fields) != 3 {
			return fmt.Errorf("header: %s wants three ids, got %q", key, value)
		}
		for i, f := range fields {
			v, err := strconv.ParseUint(f, 10, 32)
			if err != nil {
				return fmt.Errorf("header: bad id %q", f)
			}
			ids[i] = int(v)
		}
		if key == headerUIDs {
			h.UIDs = &ids
		} else {
			h.GIDs = &ids
		}
	case headerCaps:
		if len(fields) != 4 || fields[0] != "effective" || fields[2] != "permitted" {
			return fmt.Errorf("header: bad capabilities %q", value)
		}
		eff, err1 := strconv.ParseUint(fields[1], 0, 64)
		prm, err2 := strconv.ParseUint(fields[3], 0, 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("header: bad capabilities %q", value)
		}
		h.CapEffective, h.CapPermitted = &eff, &prm
	case headerRlimit:
		if len(fields) != 3 {
			return fmt.Errorf("header: bad rlimit %q", value)
		}
		res := -1
		for _, r := range rlimitNames {
			if r.name == fields[0] {
				res = r.res
			}
		}
		cur, err1 := parseLimit(fields[1])
		max, err2 := parseLimit(fields[2])
		if res < 0 || err1 != nil || err2 != nil || cur > max {
			return fmt.Errorf("header: bad rlimit %q", value)
		}
		if h.Limits == nil {
			h.Limits = map[int][2]uint64{}
		}
		h.Limits[res] = [2]uint64{cur, max}
	}
	return nil
}

func parseLimit(s string) (uint64, error) {
	if s == "unlimited" {
		return unix.RLIM_INFINITY, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

// SignalNumber returns the number of a signal as strace names it: SIGCHLD, SIGRTMIN,
// SIGRT_N (SIGRTMIN+N), or a bare number.
func SignalNumber(name string) (int, bool) {
	if n, err := strconv.Atoi(name); err == nil {
		return n, n >= 1 && n <= abi.SIGRTMAX
	}
	switch {
	case name == "SIGRTMIN":
		return abi.SIGRTMIN, true
	case name == "SIGRTMAX":
		return abi.SIGRTMAX, true
	case strings.HasPrefix(name, "SIGRT_"):
		n, err := strconv.Atoi(name[len("SIGRT_"):])
		if err != nil || n < 0 || abi.SIGRTMIN+n > abi.SIGRTMAX {
			return 0, false
		}
		return abi.SIGRTMIN + n, true
	}
	s := unix.SignalNum(name)
	return int(s), s != 0
}

// signalName names a signal as the scenario language does.
func signalName(sig int) string {
	switch {
	case sig >= 1 && sig < abi.SIGRTMIN:
		if n := unix.SignalName(syscall.Signal(sig)); n != "" {
			return n
		}
	case sig == abi.SIGRTMIN:
		return "SIGRTMIN"
	case sig == abi.SIGRTMAX:
		return "SIGRTMAX"
	case sig > abi.SIGRTMIN && sig < abi.SIGRTMAX:
		return "SIGRTMIN+" + strconv.Itoa(sig-abi.SIGRTMIN)
	}
	return strconv.Itoa(sig)
}
