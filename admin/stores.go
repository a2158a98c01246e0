package admin

import "github.com/tollgate-ai/tollgate/store"

// The store interfaces admin uses, declared here where they are consumed.
// Admin writes configuration and the audit log and reads spend; it never
// appends to the ledger, flushes it or closes a store. They embed store.Config
// whole because the typed helpers (store.Get, store.Put, store.List) take one.

// ConfigStore is what Apply and Bootstrap use: configuration documents and
// the audit log of every change.
type ConfigStore interface {
	store.Config
	store.Audit
}

// Store is what the Server uses: ConfigStore and the spend reports.
type Store interface {
	ConfigStore
	store.Spend
}

// Every backend (store.Store) is an admin Store.
var _ Store = store.Store(nil)
