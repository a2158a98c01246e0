/* replicas.pml — NREP Tollgate replicas admitting and settling through the
 * Redis scripts (accounting/redis_scripts.go), with the ledger's group commit
 * (store/groupcommit), lease expiry, a replica crash at any step, client
 * aborts, and a Redis wipe (FLUSHALL, or a restart without persistence) at
 * any moment, after which the counters are rebuilt as the ledger + what the
 * replicas re-register (accounting/redis_rejoin.go).
 *
 * Abstractions (docs/accounting.md): money is small integers; each request
 * reserves the worst cost W on its scopes (strict mode, one budget window per
 * scope, no clamp: the kernel's clamp is proved in Coq); a request's cost is
 * any amount 1..W (a client abort ends it early with a smaller one); the
 * lease may end at any moment (time is not modelled), so a request may be
 * expired while it still runs; every lease has the same length, so leases
 * end in admission order. Each Lua script is one atomic step, as Redis runs
 * it. Request r is handled by replica r % NREP; scope 0 is shared by every
 * request (a team), scope 1 only by the odd requests (a key), scope 2 by
 * requests 0 and 1 (one run of an agent, x-tollgate-run-id, on two replicas,
 * with a budget of one request's worst cost), scope 3 by requests 1 and 2 (a
 * tag with a budget, x-tollgate-tags, on two replicas, across the key and
 * the run: request 1 is on all four levels; the tag's budget holds one
 * request's worst cost and one cheaper settlement's, so whether request 2
 * fits depends on what request 1 settled at, seeded from the ledger's spend
 * of the tag after a wipe as every level is). The run's counters may expire
 * (its hash's TTL, Limits.TTL) once nothing of the run is open, queued or in
 * a spill only; its next admission seeds it from the ledger (RunExpire).
 *
 * The wipe and the rejoin (accounting/doc.go, "Redis holds no truth the
 * ledger cannot rebuild"): Redis holds an epoch; a wipe loses it with every
 * record, counter, seeded marker and lease. The admitting replica keeps its
 * own record of each request it admitted (its cache) and the settlements its
 * ledger writer has not committed (uncommitted). A replica whose epoch is not
 * Redis's re-registers both (rejoinLua): at its Sync (any moment), at an
 * admission that needs a seed (admitLua's {4}), at a settlement whose record
 * is gone (then it closes it again). The first to find the epoch missing creates
 * it and lists the replicas to wait for (the rejoin hash: every replica, the
 * members each replica copies at Sync); an admission that needs a seed waits
 * ({5}) until the hash is gone: each replica re-registered, or the grace
 * ended. The grace ends only once every replica still listed is dead: the
 * timing assumption that a live replica re-registers within the grace
 * (WithRejoinGrace 5 s, Sync every second); -DEAGERGRACE drops it.
 *
 * Usage checkpoints (accounting/checkpoint.go): while a stream runs, its
 * replica writes what it has shown to Redis next to the record (only while
 * the record exists; a wipe loses it). The model keeps one figure: a
 * checkpoint that says the stream had shown nothing billable yet (cp),
 * written with the admission (CHECKPOINT); a later figure past the allowance
 * is, for the expiry, the same as none (the worst cost W). The timing assumption of checkpoints: the replica writes
 * every interval, and a stream grows by at most the allowance (ALLOW) from
 * one write to the next, and after the last one until the provider stops
 * (the replica died, or the stream ended). So while its record and its
 * checkpoint are in Redis, a stream is billed at most ALLOW. An expiry
 * charges a checkpoint plus the allowance (capped at W) only when the
 * checkpoint is stale — its writer died (checkpointStale); a fresh one means
 * the stream still runs on a live replica, and the worst case is charged.
 *
 * The write-ahead settle (accounting/settle_ahead.go, spill.go): a
 * settlement is written to its replica's spill (a local file that survives
 * the process) before Redis closes the reservation, and queued for the
 * ledger after; a flush of the replica's writer (the spill's checkpoint)
 * deletes what it made durable. A crashed replica's next process replays its
 * spill into the ledger, which keeps a request's first entry (in Final: the
 * latest it can come).
 *
 * Build options, each a variant the checks of formal/check-spin.sh expect
 * spin to refute:
 *   -DNONATOMIC   admitLua's check and reserve in two steps;
 *   -DNOREJOIN    no rejoin: a wipe is followed by seeding from the ledger
 *                 alone (the Go code before redis_rejoin.go);
 *   -DSEEDFIRST   the replicas rejoin, but admissions seed without waiting
 *                 for the others to have re-registered;
 *   -DEAGERGRACE  the grace may end while a live replica has not rejoined;
 *   -DLATESETTLE  the old Settle: a settlement after its lease ended, of a
 *                 record Redis lost before the lease loop expired it, is
 *                 dropped (RedisCounters.Settle rejoined only while the
 *                 lease ran);
 *   -DSTALESEED   the old seedLua: a ledger read made before the wipe seeds
 *                 a window after it (no epoch check);
 *   -DLATEJOIN    the old start: replica 2 started (and admitted) less than
 *                 two Syncs before the wipe, so it is in no other replica's
 *                 copy of the members, and its own copy is empty. Join, before
 *                 a replica serves, copies the members and waits until the
 *                 others synced: every replica is in every copy, as here;
 *   -DCLOSEFIRST  the old Settle order: Redis closes the reservation, then
 *                 the entry is written to the spill and queued; a crash
 *                 between the two loses a billed request;
 *   -DNOALLOW     an expiry charges a checkpoint without the allowance;
 *   -DCPLIVE      an expiry charges the checkpoint also while its writer
 *                 is alive (the stream may still run and outgrow it);
 *   -DNOTAGCHECK  admitLua checks every level but the tag's: the tag is a
 *                 level of its own, no other one stands in for it;
 *   -DNOTAGSEED   the tag's window seeded without the ledger's spend of the
 *                 tag (rows that lose their tags);
 * The claim `strict` (the budget with no allowance for what Redis lost with
 * a dead replica) is a known gap of the Go code. -DSIMLAZY makes the lease loop and
 * the wipe less eager in the random simulations the Go trace test replays
 * (never used by the verifier); they write no checkpoints and have no crash
 * between the spill write and the close (the Go replay cannot stop a Settle
 * half way, and prices its tokens too finely for the model's allowance).
 */

#define NREP 3                /* Sync, Final and init name the three */
#define NSCOPE 4
#define NREQ 4
#define LIMIT 4             /* the budget of the team and the key */
#define RUNLIMIT 2          /* the run's budget: one request's worst cost */
#define TAGLIMIT 3          /* the tag's budget: one request's worst cost and a cheaper one's */
#define MAXRUNEXP 1
#define W 2                 /* the worst cost every request reserves */
#define MAXCRASH 1
#ifdef CLOSEFIRST
#define MAXRESTART 0        /* no wipe: the refutation is the lost row alone */
#else
#define MAXRESTART 1
#endif
#define ALL 7               /* a bit per replica */
#ifdef NOALLOW
#define CPCHARGE 0          /* the checkpoint's figure alone */
#else
#define CPCHARGE 1          /* the checkpoint's figure (0) + ALLOW, capped at W */
#endif
#define ALLOW 1             /* the output allowance of a checkpoint */
#ifdef CPLIVE
#define STALE(r) true
#else
#define STALE(r) dead[owner(r)]   /* its writer stopped writing: checkpointFresh */
#endif

#define owner(r) ((r) % NREP)
#ifdef STALESEED
#define SEEDOK true
#else
#define SEEDOK (epoch == se)   /* seedLua checks the epoch of the read */
#endif
#define inscope(r, s) ((s) == 0 || ((s) == 1 && ((r) % 2) == 1) || ((s) == 2 && (r) < 2) || ((s) == 3 && ((r) == 1 || (r) == 2)))
#ifdef NOTAGCHECK
#define TAGOK(r) true       /* admitLua skips the tag's window */
#else
#define TAGOK(r) (!inscope(r, 3) || spent[3] + resv[3] + W <= TAGLIMIT)
#endif
#ifdef NOTAGSEED
#define TAGSEED(g) 0        /* the seed reads no spend for the tag */
#else
#define TAGSEED(g) (g)
#endif
/* A stream's first checkpoint write, taken with its admission to keep the
 * states few: a write after other steps is the same as a request that was
 * expired, wiped or ended before its first write (no checkpoint), then one
 * with a checkpoint. The random simulations write none. */
#ifdef SIMLAZY
#define CHECKPOINT(r) skip
#else
#define CHECKPOINT(r) if :: cp[r] = true :: skip fi
#endif
#ifdef CLOSEFIRST
#define ENTRY(r, c) pend = true
#else
#define ENTRY(r, c) qrep[r] = c + 1
#endif

/* Redis: the scope hashes' window (sp, rs, sd), the reservation records, the
 * lease set, the epoch and the rejoin hash. */
byte spent[NSCOPE];
byte resv[NSCOPE];
bool seeded[NSCOPE];
bool rec[NREQ];
bool cp[NREQ];                     /* r's usage checkpoint: it had shown nothing billable */
chan leases = [NREQ] of { byte };  /* admission numbers, sorted: the oldest lease ends first */
byte epoch = 1;                    /* 0: missing (Redis lost its data) */
byte waiting;                      /* the rejoin hash: a bit per replica still to re-register */
/* The replicas: the epoch each registered under, its own record of the
 * requests it admitted, its ledger writer queue (an entry per request: cost+1). */
byte myEpoch[NREP];
bool cached[NREQ];
byte qrep[NREQ];
byte sp[NREQ];           /* its spill (a file: survives its process), cost+1: an entry
                          * written ahead of its close, or queued when the process died
                          * (every queued entry is in the spill too; kept apart from qrep
                          * only while it is not queued, to keep the states few) */
bool dead[NREP];
bool done[NREP];
/* PostgreSQL: the committed ledger, an entry per request (cost+1); the ledger
 * keeps a request's first entry. */
byte led[NREQ];
/* The leases' order (their deadlines, the zset's scores). */
byte nadm;               /* admissions so far */
byte seqOf[NREQ];        /* r's admission number: its lease's place */
byte reqOf[NREQ];        /* the request of an admission number */
/* Ghosts. */
bool admitted[NREQ];
byte cost[NREQ];         /* what the provider billed for r: its cost; when its replica died with it, W
                          * (ALLOW with a checkpoint in Redis) */
bool expired[NREQ];      /* the lease loop closed r: its lease ended */
bool lost[NREQ];         /* r's entry can never reach the ledger: its open record lost with a crashed replica and a wipe */
byte lostc[NREQ];        /* cost+1 of r's entry lost in a crashed replica's queue (the commit window) */
byte ends[NREQ];         /* closes of r's record in Redis */
byte accepted[NSCOPE];   /* costs of every close the counters accepted */
byte exposure[NSCOPE];   /* the bill: Σ admitted r of its cost once ended, W while it may still be billed */
byte gap[NSCOPE];        /* money Redis lost that no live replica holds (a dead replica's, at a wipe) */
byte crashes;
byte restarts;
byte runexp;             /* the run's counters expired (RunExpire) */
bool rseed[NREP];        /* the replica read the ledger to seed the run and has not run seedLua yet */
bool over;               /* Final ran: nothing moves after it */

/* settleLua / an expiry: the first to delete the record wins. */
inline closeRec(r, c, ok) {
  if
  :: rec[r] ->
     rec[r] = false; cp[r] = false;   /* its checkpoint no longer counts */
     resv[0] = resv[0] - W; spent[0] = spent[0] + c;
     if :: inscope(r, 1) -> resv[1] = resv[1] - W; spent[1] = spent[1] + c :: else -> skip fi;
     if :: inscope(r, 2) -> resv[2] = resv[2] - W; spent[2] = spent[2] + c :: else -> skip fi;
     if :: inscope(r, 3) -> resv[3] = resv[3] - W; spent[3] = spent[3] + c :: else -> skip fi;
     if
     :: restarts == 0 ->   /* ghosts of ONCE and EXACT, checked before a wipe only */
        ends[r]++; accepted[0] = accepted[0] + c;
        if :: inscope(r, 1) -> accepted[1] = accepted[1] + c :: else -> skip fi;
        if :: inscope(r, 2) -> accepted[2] = accepted[2] + c :: else -> skip fi;
        if :: inscope(r, 3) -> accepted[3] = accepted[3] + c :: else -> skip fi
     :: else -> skip
     fi;
     ok = true
  :: else -> ok = false
  fi
}

/* The request ended; the provider billed c (exposure held W until now). */
inline bill(r, c) {
  cost[r] = c;
  exposure[0] = exposure[0] - W + c;
  if :: inscope(r, 1) -> exposure[1] = exposure[1] - W + c :: else -> skip fi;
  if :: inscope(r, 2) -> exposure[2] = exposure[2] - W + c :: else -> skip fi;
  if :: inscope(r, 3) -> exposure[3] = exposure[3] - W + c :: else -> skip fi
}

/* Group commit of replica p's writer: one transaction; the ledger keeps a
 * request's first entry (groupcommit.Unique, ON CONFLICT DO NOTHING). */
inline flush(p) {
  d_step {
    j = p;
    do
    :: j < NREQ ->
       if
       :: qrep[j] > 0 -> if :: led[j] == 0 -> led[j] = qrep[j] :: else -> skip fi; qrep[j] = 0
       :: else -> skip
       fi;
       j = j + NREP
    :: else -> break
    od;
    j = 0
  }
  printf("OP flush %d\n", p)
}

/* Σ of the ledger over scope sc (store.Spend.ScopeSpend). */
inline ledgerSum(sc, sum) {
  d_step {
    sum = 0; j = 0;
    do
    :: j < NREQ -> if :: inscope(j, sc) && led[j] > 0 -> sum = sum + led[j] - 1 :: else -> skip fi; j++
    :: else -> break
    od;
    j = 0
  }
}

/* rejoinLua (RedisCounters.rejoin): when Redis's epoch is not the replica's,
 * the first to find it missing creates it and lists the replicas to wait
 * for; the replica re-registers (SET NX) its open records with their leases
 * and reserved money, and the settlements its ledger has not committed, then
 * leaves the rejoin hash. */
inline rejoin(me) {
  atomic {
    if
    :: myEpoch[me] == epoch -> skip
    :: else ->
#ifndef NOREJOIN
       if
       :: epoch == 0 ->
          epoch = restarts + 1;
#ifndef LATEJOIN
          waiting = ALL
#else
          waiting = (me == 2 -> 4 : 3)   /* the old start: replica 2 in no copy, its own empty */
#endif
       :: else -> skip
       fi;
       j = me;
       do
       :: j < NREQ ->
          if
          :: cached[j] && !rec[j] ->
             rec[j] = true; leases!!seqOf[j];
             resv[0] = resv[0] + W;
             if :: inscope(j, 1) -> resv[1] = resv[1] + W :: else -> skip fi;
             if :: inscope(j, 2) -> resv[2] = resv[2] + W :: else -> skip fi;
             if :: inscope(j, 3) -> resv[3] = resv[3] + W :: else -> skip fi
          :: else -> skip
          fi;
          if
          :: qrep[j] > 0 ->
             spent[0] = spent[0] + qrep[j] - 1;
             if :: inscope(j, 1) -> spent[1] = spent[1] + qrep[j] - 1 :: else -> skip fi;
             if :: inscope(j, 2) -> spent[2] = spent[2] + qrep[j] - 1 :: else -> skip fi;
             if :: inscope(j, 3) -> spent[3] = spent[3] + qrep[j] - 1 :: else -> skip fi
          :: else -> skip
          fi;
          j = j + NREP
       :: else -> break
       od;
       j = 0;
       waiting = waiting & (ALL - (1 << me));
#endif
       myEpoch[me] = epoch;
       printf("OP rejoin %d %d\n", me, waiting)
    fi
  }
}

/* A replica dies (kill -9): its writer queue is lost, but every entry in it
 * is in its spill too, which its next process replays (Final); its running
 * request may still be billed (up to W, or ALLOW with a checkpoint) and is
 * left to the lease. What Redis lost and this replica had not re-registered
 * yet is gone for good. */
inline crash(me) {
  atomic {
    crashes < MAXCRASH;
    crashes++;
    dead[me] = true;
    j = me;
    do
    :: j < NREQ ->
       if
       :: qrep[j] > 0 ->
          sp[j] = qrep[j];   /* the queue dies, the spill holds it */
          if
          :: restarts == 0 -> lostc[j] = qrep[j]   /* gone from Redis too if it loses its data */
          :: restarts > 0 && myEpoch[me] != epoch ->
             gap[0] = gap[0] + qrep[j] - 1;
             if :: inscope(j, 1) -> gap[1] = gap[1] + qrep[j] - 1 :: else -> skip fi;
             if :: inscope(j, 2) -> gap[2] = gap[2] + qrep[j] - 1 :: else -> skip fi;
             if :: inscope(j, 3) -> gap[3] = gap[3] + qrep[j] - 1 :: else -> skip fi
          :: else -> skip
          fi;
          qrep[j] = 0
       :: else -> skip
       fi;
       if
       :: cached[j] && !rec[j] && !expired[j] && myEpoch[me] != epoch ->
          lost[j] = true;
          gap[0] = gap[0] + W;
          if :: inscope(j, 1) -> gap[1] = gap[1] + W :: else -> skip fi;
          if :: inscope(j, 2) -> gap[2] = gap[2] + W :: else -> skip fi;
          if :: inscope(j, 3) -> gap[3] = gap[3] + W :: else -> skip fi
       :: else -> skip
       fi;
       j = j + NREP
    :: else -> break
    od;
    j = 0;
    printf("OP crash %d\n", me);
    goto stop
  }
}

proctype Replica(byte me) {
  byte r = me, c, v, t, u, g, j, code, se;
  bool ok, need, pend;
  do
  :: r >= NREQ -> break
  :: r < NREQ ->
admit:
     atomic { /* admitLua: check every scope, then reserve on all, in one step */
       need = (!seeded[0] || (inscope(r, 1) && !seeded[1]) || (inscope(r, 2) && !seeded[2]) || (inscope(r, 3) && !seeded[3]));
       if
       :: need ->
#ifdef NOREJOIN
          code = 2;
          se = epoch
#else
          if
          :: myEpoch[me] != epoch -> code = 4                    /* rejoin first */
#ifdef SEEDFIRST
          :: else -> code = 2
#else
          :: myEpoch[me] == epoch && waiting != 0 -> code = 5    /* wait */
          :: myEpoch[me] == epoch && waiting == 0 -> code = 2    /* seed */
#endif
          fi;
          se = epoch   /* the epoch the seed is read under (admitLua's last string) */
#endif
       :: else ->
#ifndef NONATOMIC
          if
          :: (spent[0] + resv[0] + W <= LIMIT) && (!inscope(r, 1) || spent[1] + resv[1] + W <= LIMIT) &&
             (!inscope(r, 2) || spent[2] + resv[2] + W <= RUNLIMIT) && TAGOK(r) ->
             rec[r] = true; cached[r] = true; admitted[r] = true; CHECKPOINT(r);
             seqOf[r] = nadm; reqOf[nadm] = r; leases!!nadm; nadm++;
             resv[0] = resv[0] + W; exposure[0] = exposure[0] + W;
             if :: inscope(r, 1) -> resv[1] = resv[1] + W; exposure[1] = exposure[1] + W :: else -> skip fi;
             if :: inscope(r, 2) -> resv[2] = resv[2] + W; exposure[2] = exposure[2] + W :: else -> skip fi;
             if :: inscope(r, 3) -> resv[3] = resv[3] + W; exposure[3] = exposure[3] + W :: else -> skip fi;
             ok = true
          :: else -> ok = false
          fi;
          printf("OP admit %d %d\n", r, ok)
#else
          ok = ((spent[0] + resv[0] + W <= LIMIT) && (!inscope(r, 1) || spent[1] + resv[1] + W <= LIMIT) &&
                (!inscope(r, 2) || spent[2] + resv[2] + W <= RUNLIMIT) && TAGOK(r))
#endif
       fi
     }
#ifdef NONATOMIC
     /* Mutation: the reserve is a step of its own, after the check. */
     if
     :: !need && ok -> atomic {
          rec[r] = true; cached[r] = true; admitted[r] = true; CHECKPOINT(r);
          seqOf[r] = nadm; reqOf[nadm] = r; leases!!nadm; nadm++;
          resv[0] = resv[0] + W; exposure[0] = exposure[0] + W;
          if :: inscope(r, 1) -> resv[1] = resv[1] + W; exposure[1] = exposure[1] + W :: else -> skip fi;
          if :: inscope(r, 2) -> resv[2] = resv[2] + W; exposure[2] = exposure[2] + W :: else -> skip fi;
          if :: inscope(r, 3) -> resv[3] = resv[3] + W; exposure[3] = exposure[3] + W :: else -> skip fi
        }
     :: else -> skip
     fi;
#endif
     if
     :: need ->
        if
        :: code == 4 -> rejoin(me)
        :: code == 5 -> waiting == 0   /* waitRejoin polls until the rejoin hash is gone */
        :: code == 2 ->
           /* SeedFunc (LedgerSeed): flush this replica's ledger and read the
            * ledger's spend of each window; then seedLua adds it to what was
            * charged meanwhile, once per window — unless Redis lost its data
            * since the admission (its epoch is not se: the read may miss
            * what the replicas re-register; the admission retries). */
           atomic {
             flush(me);
             ledgerSum(0, v);
             ledgerSum(1, t);
             ledgerSum(2, u);
             ledgerSum(3, g);
             rseed[me] = inscope(r, 2)
           };
           atomic {
             if
             :: SEEDOK ->
                if
                :: !seeded[0] -> spent[0] = spent[0] + v; seeded[0] = true; printf("OP seed 0 %d\n", v)
                :: else -> skip
                fi;
                if
                :: inscope(r, 1) && !seeded[1] -> spent[1] = spent[1] + t; seeded[1] = true; printf("OP seed 1 %d\n", t)
                :: else -> skip
                fi;
                if
                :: inscope(r, 2) && !seeded[2] -> spent[2] = spent[2] + u; seeded[2] = true; printf("OP seed 2 %d\n", u)
                :: else -> skip
                fi;
                if
                :: inscope(r, 3) && !seeded[3] -> spent[3] = spent[3] + TAGSEED(g); seeded[3] = true; printf("OP seed 3 %d\n", g)
                :: else -> skip
                fi
             :: else -> skip   /* refused: Redis lost its data since the read */
             fi;
             v = 0; t = 0; u = 0; g = 0; rseed[me] = false
           }
        fi;
        code = 0; se = 0;
        need = false;
        goto admit
     :: else -> skip
     fi;
     if
     :: ok ->
        /* The request runs: it completes or the client aborts; either way it
         * is settled with its cost (a crash here leaves it to the lease). */
        if
        :: atomic { crashes < MAXCRASH ->
             /* The provider bills what it produced before it noticed: at
              * most ALLOW past a checkpoint in Redis, else up to W. */
             if :: cp[r] && rec[r] -> c = ALLOW :: else -> c = W fi;
             bill(r, c); c = 0;
             crash(me) }
        :: atomic {
             /* It ended: aborted by the client or failed (less than the
              * worst), or completed at the worst cost — within the
              * allowance of a checkpoint in Redis. The provider billed c;
              * the settlement is written to the spill first. */
             if :: c = 1 :: !cp[r] || !rec[r] -> c = W fi;
             bill(r, c);
#ifndef CLOSEFIRST
             sp[r] = c + 1;
#ifndef SIMLAZY
             /* A crash between the spill write and the close: the entry is
              * replayed, the reservation expires. (Taken in the same step:
              * another process's step between the two is the same as one
              * before the spill write or after the close.) */
             if
             :: crash(me)
             :: skip
             fi;
#endif
#endif
             skip }
        fi;
        atomic { /* RedisCounters.Settle */
          closeRec(r, c, ok);   /* settleLua */
          if
          :: ok -> ENTRY(r, c)
#ifdef LATESETTLE
          :: !ok && !expired[r] -> skip
             /* The old rule: its lease ended, but Redis lost the record
              * before the lease loop expired it; Settle saw a record gone
              * after its deadline and wrote no entry. */
#endif
          :: !ok ->
             /* Gone: Redis lost it, or the lease loop expired it. Rejoin (a
              * no-op when the replica's epoch is Redis's; else it
              * re-registers its records, this one too), then settleLua
              * again; the deadline is tested after that. */
             rejoin(me);
             closeRec(r, c, ok);
             if
             :: ok -> ENTRY(r, c)
             :: !ok && expired[r] -> skip   /* after its lease: the expiry's entry stands */
             :: !ok && !expired[r] ->
                /* still gone while its lease runs: settleWithout, the
                 * entry goes to the ledger, not to Redis */
                ENTRY(r, c);
                ok = true
             fi
          fi;
          cached[r] = false;
          sp[r] = 0;   /* queued (in the spill too), or the expiry's entry stands */
          printf("OP settle %d %d %d\n", r, c, ok)
        };
#ifdef CLOSEFIRST
        /* The old order: the entry is recorded (spill, then the queue) after
         * Redis closed the reservation. */
        if
        :: crash(me)
        :: skip
        fi;
        atomic { if :: pend -> qrep[r] = c + 1; pend = false :: else -> skip fi };
#endif
        c = 0; ok = false;
        if
        :: crash(me)   /* the settled cost is still queued: the commit window */
        :: skip
        fi
     :: else -> skip
     fi;
     ok = false;
     r = r + NREP
  od;
  atomic {
    flush(me);   /* the writer's flush (and Close's) */
    done[me] = true
  };
stop:
  skip
}

/* The lease loop of any replica: the oldest lease may end at any moment;
 * Expire charges its worst cost, or a stale checkpoint plus its allowance,
 * and the expiring replica's writer commits the entry (it does not crash
 * here). */
proctype Expirer() {
  byte k, r, ch;
  bool ok;
end:
  do
  :: atomic {
#ifdef SIMLAZY
       /* Random simulations only: leases end less eagerly, so that runs also
        * reach settlements before the lease. */
       nempty(leases);
       if :: true :: true :: true -> goto later :: true -> goto later :: true -> goto later fi;
#endif
       leases?k;   /* the oldest lease ends; a settled one is already gone */
       r = reqOf[k];
       if
       :: rec[r] ->
          /* expiryCharges: a stale checkpoint plus its allowance, else W */
          if :: cp[r] && STALE(r) -> ch = CPCHARGE :: else -> ch = W fi;
          closeRec(r, ch, ok);
          expired[r] = true;
          if :: led[r] == 0 -> led[r] = ch + 1 :: else -> skip fi;
          printf("OP expire %d\n", r);
          ch = 0
       :: else -> skip
       fi;
       k = 0; r = 0; ok = false;
later: skip
     }
  od
}

/* Each replica's Sync (every second): rejoin when its epoch is not Redis's;
 * and the rejoin hash's expiry at the end of the grace. */
proctype Sync() {
  byte j;
end:
  do
  :: atomic { !dead[0] && myEpoch[0] != epoch -> rejoin(0) }
  :: atomic { !dead[1] && myEpoch[1] != epoch -> rejoin(1) }
  :: atomic { !dead[2] && myEpoch[2] != epoch -> rejoin(2) }
#ifdef EAGERGRACE
  :: atomic { waiting != 0 -> waiting = 0; printf("OP grace\n") }
#else
  :: atomic { waiting != 0 && (dead[0] || (waiting & 1) == 0) && (dead[1] || (waiting & 2) == 0) && (dead[2] || (waiting & 4) == 0) ->
       waiting = 0; printf("OP grace\n") }
#endif
  od
}

/* The run's counters expire: its scope hash's TTL (Limits.TTL), at least
 * the lease + 1 min after the run's last admission, refreshed by each. The
 * model takes that TTL to outlast the run's requests, a live writer's
 * commit window and a crashed replica's replay of its spill: the hash
 * expires only once the run has admitted something and nothing of it is
 * open in Redis, queued in a writer, in a spill only, or waiting to be
 * re-registered after a wipe, nor between a replica's ledger read for a
 * seed of the run and its seedLua (an admission's few seconds at most,
 * its timeout, against the TTL: seedLua has no generation to refuse a read
 * made before the hash expired, as it has the epoch for a wipe). Its next
 * admission finds its window unseeded and seeds it from the ledger
 * (admitLua {2}). The writers' part is no longer timing in the Go code: a
 * live replica keeps the hash of every run it holds an uncommitted
 * settlement of (accounting/redis_keepruns.go, at each Sync), and the
 * in-process accountant flushes its ledger before it seeds a run
 * (seedRuns); a dead replica's spill (sp, lostc) stays the assumption (its
 * restart replays it within the TTL). -DEARLYRUNEXP drops
 * the writers' and spills' part of the guard: a run seeded from a
 * ledger that misses one of its settlements overspends. */
#define RUNQUIET ((admitted[0] || admitted[1]) && !rec[0] && !rec[1] && (!cached[0] || expired[0]) && (!cached[1] || expired[1]) && !rseed[0] && !rseed[1])
#ifdef EARLYRUNEXP
#define RUNDURABLE true
#else
#define RUNDURABLE (qrep[0] == 0 && qrep[1] == 0 && sp[0] == 0 && sp[1] == 0 && lostc[0] == 0 && lostc[1] == 0)
#endif
proctype RunExpire() {
  atomic {
    /* one guard: an atomic sequence that blocks half way is no longer atomic */
    !over && runexp < MAXRUNEXP && RUNQUIET && RUNDURABLE;
    runexp++;
    spent[2] = 0; resv[2] = 0; seeded[2] = false;
    printf("OP runexpire\n")
  }
}

/* Redis loses its data: records, counters, seeded markers, leases, the epoch
 * and the rejoin hash. What a dead replica held there is gone for good. */
proctype Restart() {
  byte j;
#ifdef SIMLAZY
  /* Random simulations only: the wipe comes at a random later step. */
  do :: nadm >= 2 -> break :: nadm >= 1 -> skip :: nadm >= 1 -> skip od;
#endif
  atomic {
    restarts < MAXRESTART;
#ifdef SIMLAZY
    nadm >= 2;
#endif
    restarts++;
    accepted[0] = 0; accepted[1] = 0; accepted[2] = 0; accepted[3] = 0; ends[0] = 0; ends[1] = 0; ends[2] = 0; ends[3] = 0;
    spent[0] = 0; spent[1] = 0; spent[2] = 0; spent[3] = 0; resv[0] = 0; resv[1] = 0; resv[2] = 0; resv[3] = 0;
    seeded[0] = false; seeded[1] = false; seeded[2] = false; seeded[3] = false;
    epoch = 0; waiting = 0;
    do :: leases?j :: empty(leases) -> break od;
    j = 0;
    do
    :: j < NREQ ->
       if
       :: rec[j] ->
          rec[j] = false;
          cp[j] = false;
          if
          :: dead[owner(j)] ->
             lost[j] = true;
             gap[0] = gap[0] + W;
             if :: inscope(j, 1) -> gap[1] = gap[1] + W :: else -> skip fi;
             if :: inscope(j, 2) -> gap[2] = gap[2] + W :: else -> skip fi;
             if :: inscope(j, 3) -> gap[3] = gap[3] + W :: else -> skip fi
          :: else -> skip
          fi
       :: else -> skip
       fi;
       if
       :: lostc[j] > 0 ->
          gap[0] = gap[0] + lostc[j] - 1;
          if :: inscope(j, 1) -> gap[1] = gap[1] + lostc[j] - 1 :: else -> skip fi;
          if :: inscope(j, 2) -> gap[2] = gap[2] + lostc[j] - 1 :: else -> skip fi;
          if :: inscope(j, 3) -> gap[3] = gap[3] + lostc[j] - 1 :: else -> skip fi;
          lostc[j] = 0
       :: else -> skip
       fi;
       j++
    :: else -> break
    od;
    j = 0;
    printf("OP restart\n")
  }
}

/* When nothing else can move: every replica finished (or died), no
 * reservation is held, and every admitted request is in the ledger once
 * (the ledger keeps one entry per request), at no less than the provider
 * billed, at exactly that when its lease did not end first — unless its
 * open record was lost with a crashed replica and a wipe (the known gap). A
 * crashed replica's spill was replayed. */
proctype Final() {
  byte r, j, l0, l1, l2, l3;
  timeout ->
  atomic {
    over = true;
    assert((done[0] || dead[0]) && (done[1] || dead[1]) && (done[2] || dead[2]));
    /* The crashed replica's next process opens its spill directory and
     * replays the dead one's files into the ledger, which keeps a request's
     * first entry (an expiry may have written one). Here at the end, the
     * latest it can come: a replay before a seed only adds to what the seed
     * reads, and nothing else reads the ledger. */
    j = 0;
    do
    :: j < NREQ ->
       if
       :: sp[j] > 0 -> if :: led[j] == 0 -> led[j] = sp[j] :: else -> skip fi; sp[j] = 0; printf("OP replay %d\n", j % NREP)
       :: else -> skip
       fi;
       j++
    :: else -> break
    od;
    j = 0;
    r = 0;
    do
    :: r < NREQ ->
       assert(!rec[r]);
       assert(!admitted[r] || led[r] > 0 || lost[r]);
       assert(led[r] == 0 || led[r] - 1 >= cost[r]);
       assert(led[r] == 0 || expired[r] || led[r] - 1 == cost[r]);
       r++
    :: else -> break
    od;
    assert(resv[0] == 0 && resv[1] == 0 && resv[2] == 0 && resv[3] == 0);
    ledgerSum(0, l0);
    ledgerSum(1, l1);
    ledgerSum(2, l2);
    ledgerSum(3, l3);
    printf("OP final %d %d %d %d %d %d %d %d %d %d %d %d\n", spent[0], resv[0], spent[1], resv[1], spent[2], resv[2], spent[3], resv[3], l0, l1, l2, l3)
  }
}

init {
  /* A fresh Redis: the windows are seeded by the first admissions (from an
   * empty ledger), so a ledger read may also precede the wipe. */
  myEpoch[0] = 1; myEpoch[1] = 1; myEpoch[2] = 1;
  atomic {
    run Replica(0); run Replica(1); run Replica(2);
    run Expirer(); run Sync(); run Restart(); run RunExpire(); run Final()
  }
}

/* Safety, at every step: the provider's bill (every admitted request at its
 * cost once ended, at its worst while it may still be billed) stays within
 * every strict budget, beyond what Redis lost with a dead replica (gap); and
 * before any wipe, no record is closed twice and the counters hold exactly
 * the accepted costs. */
#define BUDGET (exposure[0] <= LIMIT + gap[0] && exposure[1] <= LIMIT + gap[1] && exposure[2] <= RUNLIMIT + gap[2] && exposure[3] <= TAGLIMIT + gap[3])
#define STRICT (exposure[0] <= LIMIT && exposure[1] <= LIMIT && exposure[2] <= RUNLIMIT && exposure[3] <= TAGLIMIT)
#define ONCE (restarts > 0 || (ends[0] <= 1 && ends[1] <= 1 && ends[2] <= 1 && ends[3] <= 1))
/* (the run's counters start again from the ledger once they expired) */
#define EXACT (restarts > 0 || (spent[0] == accepted[0] && spent[1] == accepted[1] && (runexp > 0 || spent[2] == accepted[2]) && spent[3] == accepted[3]))

ltl safe { [] (BUDGET && ONCE && EXACT) }
ltl budget { [] BUDGET }
ltl strict { [] STRICT }
