//go:build race

package extprocfilter

// raceEnabled: built with the race detector, which the data plane's tests
// run under; released Streams are then poisoned rather than reused (pool.go).
const raceEnabled = true
