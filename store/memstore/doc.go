// Package memstore is a store.Store held entirely in memory, for tests of the
// packages that consume a store. It passes the conformance suite in
// store/storetest, so it behaves as the durable backends do, except that
// nothing survives Close and the ledger is written at once (Append is durable
// when it returns).
//
// It imports only kernel, store and the standard library.
package memstore
