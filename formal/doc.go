// Package formal ties Tollgate's accounting to its machine-checked models
// (see docs/accounting.md): the Coq transcription of the kernel and its
// proofs in formal/coq, and the spin model of the replicas in formal/spin.
//
// It holds no production code. Its tests replay operation sequences computed
// by the Coq transcription (coqc) and simulation runs of the spin model
// against kernel.State and against the Redis scripts of accounting/ (redis_scripts.go), and
// require the same decisions and the same final counters, so that a change
// of the kernel that the models do not follow fails `make test`.
//
// Only its tests import anything (kernel, accounting, internal/testenv);
// nothing may import this package.
package formal
