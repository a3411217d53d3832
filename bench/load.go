package bench

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is USER_HZ, the unit of /proc/stat's times on every Linux
// architecture Go supports.
const clockTick = 100

// cpuReading is a reading of how busy the machine's CPUs and this
// process (or its children) have been.
type cpuReading struct {
	at time.Time
	// busy is the machine's CPU time outside idle and I/O wait, every
	// CPU together; ok is false where /proc/stat cannot be read.
	busy time.Duration
	ok   bool
	// own is the CPU time of this process (self) or of its waited-for
	// children.
	own time.Duration
}

// readCPU takes a reading; children selects the CPU time of this
// process's waited-for children instead of its own.
func readCPU(children bool) cpuReading {
	r := cpuReading{at: time.Now()}
	r.busy, r.ok = machineBusy()
	who := syscall.RUSAGE_SELF
	if children {
		who = syscall.RUSAGE_CHILDREN
	}
	var ru syscall.Rusage
	if syscall.Getrusage(who, &ru) == nil {
		r.own = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return r
}

// machineBusy sums /proc/stat's first line: user, nice, system, irq,
// softirq and steal (the hypervisor's share is another's load too).
func machineBusy() (time.Duration, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, false
	}
	var ticks uint64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
		n, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTick, true
}

// otherLoad returns how many CPUs' worth of work others did between two
// readings: the machine's busy time less the measured program's, over
// the time between them. It is -1 when the machine's time is unknown.
// /proc/stat counts in ticks of 10 ms, so over a short run the figure
// is coarse: good to tell a quiet machine from a busy one.
func otherLoad(before, after cpuReading) float64 {
	wall := after.at.Sub(before.at)
	if !before.ok || !after.ok || wall <= 0 {
		return -1
	}
	other := (after.busy - before.busy) - (after.own - before.own)
	return max(0, other.Seconds()/wall.Seconds())
}
