//go:build !race

package check

// raceEnabled: see race_on.go.
const raceEnabled = false
