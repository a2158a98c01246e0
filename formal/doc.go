// Package formal ties Tollgate's accounting to its machine-checked models
// (see docs/accounting.md): the Coq transcription of the kernel and its
// proofs in formal/coq, and the spin model of the replicas in formal/spin.
//
// It holds no production code. Its tests replay operation sequences computed
// by the Coq transcription (coqc) and simulation runs of the spin model
// against kernel.State and against the Redis scripts of accounting/
// (redis_scripts.go; for the spin model, three replicas' Accountants over
// RedisCounters, through a Redis wipe and their rejoin, redis_rejoin.go), and
// require the same decisions and the same final counters and ledger, so that
// a change of the kernel or of the replicas' protocol that the models do not
// follow fails `make test`.
//
// Only its tests import anything (kernel, accounting, store, store/memstore,
// internal/testenv); nothing may import this package.
package formal
