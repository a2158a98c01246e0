//go:build !race

package extprocfilter

// raceEnabled: built with the race detector (race.go).
const raceEnabled = false
