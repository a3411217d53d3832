//go:build race

package check

// raceEnabled: the unsafe plans read shared state without synchronisation
// on purpose, which the race detector reports, so their tests are skipped.
const raceEnabled = true
