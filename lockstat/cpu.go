package lockstat

import _ "unsafe" // go:linkname

// Go has no smp_processor_id; the runtime's procPin, which sync.Pool
// uses for the same purpose, returns the id of the P the goroutine runs
// on, Go's logical CPU, and is one of the runtime functions it keeps
// reachable by linkname (go.dev/issue/67401).

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// cpu returns the logical CPU the caller runs on, counted from 1 so that
// 0 can mean none. The goroutine may move on as soon as it returns: like
// Linux's lock_stat, the bounce counts it feeds are statistics.
var cpu = func() int32 {
	id := procPin()
	procUnpin()
	return int32(id) + 1
}
