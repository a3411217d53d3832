package scenario

import "fmt"

// CloneCall says which system call both runners make for clone(FLAGS) and
// clone(FLAGS, EXIT_SIGNAL), with what: clone(2), whose flags are 32 bits
// and carry the exit signal in their low byte, unless the flags do not fit
// in 32 bits or the exit signal given apart cannot go in that byte; then
// clone3, whose exit signal has a field of its own. For clone(2) flags has
// the exit signal in its low byte. For clone3 the low byte of FLAGS stays
// in flags when EXIT_SIGNAL is given, where clone3 refuses it, and is the
// exit signal otherwise.
func CloneCall(args []Value) (flags uint64, exitSignal int64, clone3 bool) {
	flags, exitSignal = uint64(args[0].Int), args[0].Int&0xff
	given := len(args) > 1
	if given {
		exitSignal = args[1].Int
	}
	if flags>>32 == 0 && (!given || flags&0xff == 0 && exitSignal >= 0 && exitSignal <= 0xff) {
		return flags&^0xff | uint64(exitSignal), exitSignal, false
	}
	if !given {
		flags &^= 0xff
	}
	return flags, exitSignal, true
}

// SetTIDBeyondInit is what both runners answer, instead of making the call,
// for a clone3 whose set_tid has more entries than there are pid namespace
// levels from the child's own up to the scenario's init's (levels): an
// entry for a namespace above init would name a pid of the runner's own
// namespaces, which the contract leaves out. The run stops there (status
// 2).
func SetTIDBeyondInit(entries, levels int) error {
	return fmt.Errorf("clone3: set_tid has %d entries, but the child has %d pid namespace levels up to the scenario's init: an entry for a namespace above init is outside the contract",
		entries, levels)
}
