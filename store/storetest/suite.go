package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/store"
)

// Option configures Run.
type Option func(*suite)

// WithReopen lets the suite check what survives Close: reopen opens the same
// database again after closed was closed. Backends without durable state
// (memory) leave it out, and the durability tests are not registered.
func WithReopen(reopen func(t *testing.T, closed store.Store) store.Store) Option {
	return func(s *suite) { s.reopen = reopen }
}

type suite struct {
	open   func(t *testing.T) store.Store
	reopen func(t *testing.T, closed store.Store) store.Store
}

// Run runs the conformance suite. open must return a fresh, empty store each
// call and must not close it: the suite does.
func Run(t *testing.T, open func(t *testing.T) store.Store, opts ...Option) {
	s := &suite{open: open}
	for _, o := range opts {
		o(s)
	}
	groups := []struct {
		name  string
		tests []test
	}{
		{"Config", s.configTests()},
		{"Watch", s.watchTests()},
		{"Ledger", s.ledgerTests()},
		{"Spend", s.spendTests()},
		{"Entries", s.entriesTests()},
		{"Audit", s.auditTests()},
		{"Responses", s.responsesTests()},
		{"MCP", s.mcpTests()},
		{"Sessions", s.sessionsTests()},
		{"SpendByScope", s.spendByScopeTests()},
		{"Guardrails", s.guardrailTests()}, // guardrails.go
		{"Cache", s.cacheTests()},          // cache.go
		{"Alerts", s.alertTests()},         // alerts.go
		{"Close", s.closeTests()},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, tc.run)
			}
		})
	}
}

type test struct {
	name string
	run  func(t *testing.T)
}

// fresh opens a store that is closed when the test ends.
func (s *suite) fresh(t *testing.T) store.Store {
	t.Helper()
	st := s.open(t)
	t.Cleanup(func() {
		require.NoError(t, st.Close(timeout(t, 30*time.Second)))
	})
	return st
}

// timeout is a context that ends after d or with the test.
func timeout(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
