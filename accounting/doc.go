// Package accounting holds the accountants: how an admission and a settlement
// reach the kernel's rules, the counters (in this process or in Redis, shared
// by replicas) and the durable ledger.
//
// # The money path
//
// The processor (extproc) calls Accountant.Admit when a request's body has
// been read and Accountant.Settle when it ended (gateway adapts
// extproc.Accountant to these two calls).
//
//   - Admit asks the Counters. LocalCounters apply kernel.State.Admit in this
//     process; RedisCounters run the same rules as one Lua script on Redis,
//     atomically over every scope and replica (below). Either reserves the
//     worst-case cost on every budget window of every scope, or nothing.
//   - Settle asks the Counters to release the reservation and charge the exact
//     cost (kernel.Cost of the usage at the reservation's price); the
//     settlement, exactly once per request id, becomes a store.LedgerEntry
//     appended to the store's ledger (store.Ledger, group-committed by the
//     backend). The ledger is the truth; counters are rebuilt from it.
//   - With a Spill (WithSpill), every entry is written ahead to a file of this
//     process before it is queued for the ledger — and, for a request this
//     replica admitted through Redis, before Redis closes its reservation
//     (settle_ahead.go) — so a crash while the ledger cannot commit
//     (PostgreSQL down), or between Redis and the ledger, loses none: the
//     next process on the directory replays the files of dead processes
//     (OpenSpill).
//   - ExpireLoop settles, every few seconds, reservations whose lease
//     (WithLease; kernel.DefaultLease) ended — kernel.State.Expire, or the
//     leases sorted set in Redis — and records them in the ledger too (which
//     keeps a request's first entry): with Redis counters, a stream at the
//     usage its replica last checkpointed plus an allowance (checkpoint.go;
//     Accountant.Checkpoint, written every WithCheckpoints interval by
//     ExpireLoop), anything else at its worst case. Beside it, every
//     second, it flushes the ledger, deletes the spill files the flush
//     covered, and warns while the ledger cannot flush; Pending is the number
//     of settlements not yet confirmed durable.
//
// Budget windows start from the ledger: the local accountant seeds kernel
// State from store.Spend for every new configuration snapshot (Seed); Redis
// counters seed each window they meet unseeded through a SeedFunc
// (LedgerSeed: flush this replica's ledger queue, then store.Spend.ScopeSpend).
//
// # Redis counters: what is stored
//
// All keys share the hash tag "{prefix}" (WithPrefix, default "tg"), so every
// script's keys are in one slot (Redis Cluster works, on one shard).
//
//   - {tg}:s:<kind>:<id> — one hash per scope. Field "n" holds its rate
//     counters: in-flight requests (f), the current UTC minute (m) and its
//     requests (r) and tokens (k) — a later minute resets r and k, an earlier
//     one counts in the stored minute (never back). Field "<period>:<start>:"
//     holds a budget window: seeded marker (sd, 1 once seeded), spent (sp) and
//     reserved (rs), keyed by the window start from kernel.Period.Window so
//     that a window resets exactly at its boundary. Both are packed as
//     little-endian doubles (f, m, r, k and sd, sp, rs; exact below 2^53):
//     the scripts read and write a scope's counters as one field each, with
//     struct.unpack and struct.pack instead of a decimal number per counter.
//     "c:<period>" (decimal) is the start of the latest seeded window of the
//     period: seeding a newer window deletes the field of the one it
//     replaces. The hash expires about a day (the scope TTL) after its last
//     admission; its windows are then re-seeded from the ledger like after a
//     flush.
//   - {tg}:r:<id> — an open reservation, one string (SET ... PX lease + 1 day):
//     "<reserved> <worst cost> <tpm tokens> <admission minute> <JSON>" where
//     the JSON holds what another replica needs to settle or expire it (model,
//     price, scopes, the periods of each scope's budgets, admission time and
//     deadline).
//   - {tg}:leases — a sorted set of open reservations by lease deadline (µs).
//   - {tg}:u:<id> — the usage checkpoint of a stream that ran past the
//     checkpoint interval: "<input> <cached input> <cache write> <output>
//     <reasoning> <output allowance>", expiring an hour after the lease (checkpoint.go).
//   - {tg}:epoch, {tg}:rejoin, {tg}:members — what tells a Redis that lost its
//     data, and who must re-register into it (below, and redis_rejoin.go).
//
// Replicas sharing a prefix must use the same layout; when it changes (budget
// windows were separate keys, records hashes, before the batched scripts;
// counters and windows were one decimal field each — f, m, r, k and
// "<period>:<start>:sd|sp|rs" — before they were packed), start on a new
// prefix or flush Redis (windows are then re-seeded from the ledger). A record
// of an older layout reads as gone; fields of an older layout are ignored
// (their scope starts from zero counters and unseeded windows).
//
// # Redis counters: scripts and batches
//
// Admissions and settlements are operations of one Lua script, batchLua. The
// pipeliner (WithPipeline: one goroutine by default, or a few, each taking
// what is queued, up to a bound, without waiting) sends the operations of
// concurrent callers as one EVALSHA (loaded on first NOSCRIPT) that runs them
// in order, each on its own keys and arguments, and answers with their
// replies in order: one round trip and one script call for many admissions
// and settlements, while a lone caller pays no extra delay. An operation's integer arguments travel as one string
// of little-endian doubles (one struct.unpack in Lua, no parsing), its strings
// (id, record JSON, window fields) as arguments of their own. Within a batch
// every hash is read once into one Lua table (HMGET of the fields the batch
// needs) and written back once at the end (one HSET of the fields that
// changed, EXPIRE where due); the lease changes of the batch are one ZADD and
// one ZREM. Operations still run one after another on a consistent
// view, so the result is the same as running them one script each, and each is
// all or nothing on its own. A batch that fails (Redis unreachable, a timeout)
// fails every operation in it with the error; records are written and deleted
// as each operation runs and counters at the end of the batch, so a script
// that stopped midway (Redis refusing its first write stops it before any)
// would leave records without their counts.
//
// An admission applies kernel.State.Admit's rules in its order: duplicate open
// id → ReasonDuplicate; budgets of every scope first (strict:
// spent+reserved+worst ≤ limit in every window, Clamp lowering the output
// bound to the largest n ≥ 1 that fits; estimate: refuse when spent ≥ limit);
// then per scope, in request order, first failure decides: expired key, model
// not allowed, max parallel, rpm, tpm (strict: input bound + the possibly
// clamped output bound; estimate: ceil(prompt bytes/4)), budget. Nothing is
// written unless everything passes; then the record is written with SET NX
// (which is also the duplicate check: on refusals an EXISTS decides between
// duplicate and the refusal), every scope counts one request, its tokens and
// one in-flight request, and every budget window of the request holds the
// worst cost (0 in estimate mode). Expiry and model checks, window starts, the
// input cost and the tpm estimate are computed in Go and passed in; money is
// passed as integers split so that Lua's doubles stay exact (values below 2^53
// nano-USD, about $9M; larger limits lose exactness).
//
// A settlement is idempotent on the reservation record (the first to delete
// it wins). Go passes what the reservation holds (reserved, worst cost, tpm
// tokens, admission minute; from the admitting replica's memory, or read from
// the record when another replica admitted it) and, per scope, the window
// fields it reserved in (its budget periods at the admission time) and those
// current at now. The script releases the reservation from the windows it was
// made in (unless they have been reset since: their fields are gone), adds the
// cost to the windows current at now, frees the in-flight slots and, on
// Settle, corrects the tpm count to Usage.Total() while the admission minute
// is still current. Expire reads the due reservations' records and settles
// them the same way with StatusExpired and their worst cost. The cost is
// computed in Go (kernel.Cost) from the price saved with the reservation.
//
// # Redis holds no truth the ledger cannot rebuild
//
// A budget window is usable only once seeded: when admission meets a window
// without the seeded marker (first use, a new window, after a Redis restart or
// flush, or after its scope's hash expired), it
// calls the SeedFunc (store.Spend.ScopeSpend over the window) and adds that to
// whatever was charged to the window meanwhile (unless Redis lost its data
// since the admission saw the window unseeded: seedLua checks the epoch),
// then retries. Until a window is
// seeded no admission passes against it; a SeedFunc error is ErrUnavailable.
// Settlements charged between the ledger read and the marker may be counted
// twice (conservative). A SeedFunc should Flush the replica's ledger before
// reading it (LedgerSeed does).
//
// After a Redis loss (a restart without persistence, a FLUSHALL), the windows
// are rebuilt as ledger + settlements not yet committed + open reservations
// (redis_rejoin.go): Redis holds an epoch id; a replica that finds it missing
// or changed (at an admission that needs a seed, at a settlement whose record
// is gone — then the deadline is tested after the rejoin —, or at Sync, every
// second from ExpireLoop)
// re-registers its open reservations (records, leases, reserved money,
// in-flight slots) and the settlements its ledger has not confirmed durable
// (the Accountant tells the counters what each checkpoint covered). The first
// replica to find the epoch missing lists the replicas alive before the loss
// (from its copy of the members hash; Join, before a replica serves, makes
// sure every replica is in the others' copies); an admission that needs a
// window seeded waits until each has re-registered, or the grace
// (WithRejoinGrace) ended.
// A settlement committed between its re-registration and the seeding is
// counted twice until the window is next seeded (conservative).
// formal/spin/replicas.pml model-checks this protocol: docs/accounting.md
// (section 2) lists what it guarantees, its timing assumption (a live replica
// re-registers within the grace) and the gaps it still finds.
//
// # Failure policy
//
// When Redis cannot be reached, FailClosed (default) makes Admit return
// ErrUnavailable (the gateway answers 503). LocalFallback admits against an
// in-process kernel.State, its windows seeded from the ledger on first use:
// limits then hold per replica only, and reservations made locally are settled
// locally.
//
// A settlement never waits for Redis: Redis is the counter, the ledger is the
// truth. When the replica that admitted a request settles it (the processor
// always does) and Redis cannot be reached, or answers that the reservation is
// gone while its lease still runs (Redis restarted empty or was flushed), the
// cost comes from the price the replica kept at admission and the entry goes
// to the ledger as usual. Redis is corrected afterwards: an unreachable Redis
// gets the close it missed from a queue of corrections (PendingCorrections,
// bounded at 100,000) that Expire applies, oldest first, once Redis answers —
// idempotent, because the script closes a reservation at most once; a Redis
// that lost its data gets the reservation back from the replica (rejoin), and
// the close then runs as usual. One gap remains: an outage longer than the
// lease lets another replica expire the reservation (worst cost, in the
// ledger too) before the correction arrives. A reservation admitted by another replica is settled
// only through Redis (ErrUnavailable while it is down).
//
// # Imports
//
// This package imports kernel, store (its interfaces and the ledger entry
// type; never a backend) and go-redis, and nothing else of Tollgate. The
// processor reaches it through extproc.Accountant, adapted in gateway.
package accounting
