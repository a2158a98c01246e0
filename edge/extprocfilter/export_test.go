package extprocfilter

import corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

// Normalize exports normalize to the package's external tests, which need
// the test-support transports of extprocfiltertest (importing it from an
// internal test would be a cycle).
func (h Headers) Normalize() Headers { return h.normalize() }

// Normalized exports normalized to the external tests.
func (h Headers) Normalized() bool { return h.normalized() }

// ToProto exports toProto to the external tests.
func (h Headers) ToProto() *corev3.HeaderMap { return h.toProto() }

// WorkersAbove sets the number of open Sync streams above which processor
// calls run on workers (calls.go) until the test ends.
func WorkersAbove(t interface{ Cleanup(func()) }, n int64) {
	old := workersAbove.Swap(n)
	t.Cleanup(func() { workersAbove.Store(old) })
}

// DefaultWorkersAbove exports defaultWorkersAbove.
const DefaultWorkersAbove = defaultWorkersAbove

// ProcWorkers is the number of processor-call workers running.
func ProcWorkers() int32 { return procWorkers.Load() }

// PoisonReleased makes released Streams poisoned (a later use panics with
// ErrReleased in the caller's goroutine) rather than reused, until the test
// ends.
func PoisonReleased(t interface{ Cleanup(func()) }) {
	oldP, oldR := poisonReleased.Swap(true), recoverable.Swap(true)
	t.Cleanup(func() { poisonReleased.Store(oldP); recoverable.Store(oldR) })
}

// ErrReleased exports errReleased.
var ErrReleased = errReleased
