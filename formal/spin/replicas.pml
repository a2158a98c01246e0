/* replicas.pml — NREP Tollgate replicas admitting and settling through the
 * Redis scripts (accounting/redis_scripts.go), with the ledger's group commit
 * (store/groupcommit), lease expiry, a Redis restart re-seeded from the
 * ledger, a replica crash at any step and client aborts.
 *
 * Abstractions (docs/accounting.md): money is small integers; each request
 * reserves the worst cost W on its scopes (strict mode, one budget window per
 * scope, no clamp: the kernel's clamp is proved in Coq); a request's cost is
 * any amount 0..W (a client abort ends it early with a smaller one); the
 * lease may end at any moment (time is not modelled), so a request may be
 * expired while it still runs. Each Lua script is one atomic step, as Redis
 * runs it. Request r is handled by replica r % NREP; scope 0 is shared by
 * every request (a team), scope 1 only by the odd requests (a key).
 *
 * Build options: -DNONATOMIC splits admitLua's check and reserve into two
 * steps (the mutation the check must catch); -DRESTARTLOSS checks the
 * property that a settled request's spend reaches the ledger even when Redis
 * lost its reservation (a known gap of the Go code, see docs/accounting.md);
 * -DSIMLAZY makes the lease loop and the restart less eager in the random
 * simulations the Go trace test replays.
 */

#ifndef NREP
#define NREP 3
#endif
#define NSCOPE 2
#define NREQ 4
#define NQ (NREP + 1)       /* ledger writer queues: one per replica, one for the expirer */
#define EXPIRER NREP
#define LIMIT 4             /* the budget of every scope */
#define W 2                 /* the worst cost every request reserves */
#define MAXCRASH 1
#define MAXRESTART 1

#define inscope(r, s) ((s) == 0 || ((r) % 2) == 1)

/* Redis: the scope hashes' window (sp, rs, sd) and the reservation records. */
byte spent[NSCOPE];
byte resv[NSCOPE];
bool seeded[NSCOPE];
bool rec[NREQ];
chan leases = [NREQ] of { byte };   /* the lease zset: equal leases expire oldest first */
/* PostgreSQL: the committed ledger, per scope. */
byte ledger[NSCOPE];
/* Each process's ledger writer queue (appended, not yet committed), per scope. */
byte queue[NQ * NSCOPE];
/* Ghosts. */
byte accepted[NSCOPE];   /* costs of every settlement and expiry the counters accepted */
byte ends[NREQ];         /* settlements + expiries that closed request r */
bool admitted[NREQ];
bool wiped[NREQ];        /* r's reservation was lost in a Redis restart */
byte lostCrash[NSCOPE];  /* queued costs a crashed replica never committed (the commit window) */
byte lostRestart[NSCOPE];/* costs of requests settled after Redis lost their reservation */
byte crashes;
byte restarts;

#define Q(p, s) queue[(p) * NSCOPE + (s)]
#define QSUM(s) (Q(0, s) + Q(1, s) + Q(2, s) + Q(3, s))

/* settleLua / an expiry: the first to delete the record wins. */
inline closeRec(r, c, p, ok) {
  if
  :: rec[r] ->
     rec[r] = false;
     ends[r]++;
     s = 0;
     do
     :: s < NSCOPE ->
        if
        :: inscope(r, s) ->
           resv[s] = resv[s] - W;
           spent[s] = spent[s] + c;
           accepted[s] = accepted[s] + c;
           Q(p, s) = Q(p, s) + c   /* the caller appends the ledger entry */
        :: else -> skip
        fi;
        s++
     :: else -> break
     od;
     ok = true
  :: else -> ok = false
  fi
}

/* The group commit: the writer commits its queue in one transaction. */
inline flush(p) {
  d_step {
    ledger[0] = ledger[0] + Q(p, 0); Q(p, 0) = 0;
    ledger[1] = ledger[1] + Q(p, 1); Q(p, 1) = 0
  }
}

inline crash(me) {
  atomic {
    crashes < MAXCRASH;
    crashes++;
    lostCrash[0] = lostCrash[0] + Q(me, 0); Q(me, 0) = 0;
    lostCrash[1] = lostCrash[1] + Q(me, 1); Q(me, 1) = 0;
    goto stop
  }
}

proctype Replica(byte me) {
  byte r = me, s, c, v, t;
  bool ok, need;
  do
  :: r >= NREQ -> break
  :: r < NREQ ->
admit:
#ifndef NONATOMIC
     atomic { /* admitLua: check every scope, then reserve on all, in one step */
       need = (!seeded[0] || (inscope(r, 1) && !seeded[1]));
       if
       :: need -> skip
       :: else ->
          if
          :: (spent[0] + resv[0] + W <= LIMIT) && (!inscope(r, 1) || spent[1] + resv[1] + W <= LIMIT) ->
             rec[r] = true; admitted[r] = true; leases!r;
             resv[0] = resv[0] + W;
             if :: inscope(r, 1) -> resv[1] = resv[1] + W :: else -> skip fi;
             ok = true
          :: else -> ok = false
          fi;
          printf("OP admit %d %d\n", r, ok)
       fi
     }
#else
     /* Mutation: the check and the reserve are separate steps. */
     atomic {
       need = (!seeded[0] || (inscope(r, 1) && !seeded[1]));
       ok = (!need && (spent[0] + resv[0] + W <= LIMIT) && (!inscope(r, 1) || spent[1] + resv[1] + W <= LIMIT))
     }
     if
     :: ok -> atomic {
          rec[r] = true; admitted[r] = true; leases!r;
          resv[0] = resv[0] + W;
          if :: inscope(r, 1) -> resv[1] = resv[1] + W :: else -> skip fi
        }
     :: else -> skip
     fi;
     if :: !need -> printf("OP admit %d %d\n", r, ok) :: else -> skip fi;
#endif
     if
     :: need ->
        /* SeedFunc: flush this replica's ledger, read the ledger, then seedLua
         * adds it to what was charged meanwhile, once per window. */
        flush(me);
        t = 0;
        do
        :: t < NSCOPE ->
           if
           :: inscope(r, t) && !seeded[t] ->
              v = ledger[t];
              atomic {
                if
                :: !seeded[t] -> spent[t] = spent[t] + v; seeded[t] = true; printf("OP seed %d %d\n", t, v)
                :: else -> skip
                fi;
                v = 0
              }
           :: else -> skip
           fi;
           t++
        :: else -> t = 0; break
        od;
        need = false;
        goto admit
     :: else -> skip
     fi;
     if
     :: ok ->
        /* The request runs: it completes or the client aborts; either way it
         * is settled with its cost (a crash here leaves it to the lease). */
        if
        :: crash(me)
        :: c = 1   /* aborted by the client, or failed: less than the worst */
        :: c = W   /* completed at the worst cost */
        fi;
        atomic {
          closeRec(r, c, me, ok);
          printf("OP settle %d %d %d\n", r, c, ok);
          if
          :: !ok && wiped[r] -> /* Settle found no record: the gateway writes no entry */
             lostRestart[0] = lostRestart[0] + c;
             if :: inscope(r, 1) -> lostRestart[1] = lostRestart[1] + c :: else -> skip fi
          :: else -> skip
          fi;
          c = 0; s = 0; ok = false
        };
        if
        :: crash(me)   /* the settled cost is still queued: the commit window */
        :: skip
        fi
     :: else -> skip
     fi;
     ok = false;
     r = r + NREP
  od;
  flush(me);   /* Close flushes the writer */
stop:
  skip
}

/* The lease loop of any replica: the lease of an open reservation may end at
 * any moment; Expire charges its worst cost. */
proctype Expirer() {
  byte r, s;
  bool ok;
end:
  do
  :: atomic {
#ifdef SIMLAZY
       /* Random simulations only: leases end less eagerly, so that runs also
        * reach settlements before the lease (never used by the verifier). */
       nempty(leases);
       if :: true :: true :: true -> goto later :: true -> goto later fi;
#endif
       leases?r;   /* the oldest lease ends; a settled one is already gone */
       if
       :: rec[r] ->
          closeRec(r, W, EXPIRER, ok);
          printf("OP expire %d\n", r);
          flush(EXPIRER)   /* the expiring replica's writer (it does not crash here) */
       :: else -> skip
       fi;
       r = 0; s = 0; ok = false;
later: skip
     }
  od
}

/* Redis restarts empty: records, counters and seeded markers are gone. */
proctype Restart() {
  byte r;
  atomic {
    restarts < MAXRESTART;
#ifdef SIMLAZY
    admitted[0] + admitted[1] + admitted[2] + admitted[3] >= 2;
#endif
    restarts++;
    spent[0] = 0; spent[1] = 0; resv[0] = 0; resv[1] = 0;
    seeded[0] = false; seeded[1] = false;
    do :: leases?r :: empty(leases) -> break od;
    printf("OP restart\n");
    r = 0;
    do
    :: r < NREQ -> if :: rec[r] -> wiped[r] = true; rec[r] = false :: else -> skip fi; r++
    :: else -> break
    od
  }
}

/* When nothing else can move: every reservation was settled or expired exactly
 * once (or lost with Redis), none is held, and every accepted cost is in the
 * ledger or was lost in a crashed replica's commit window. */
proctype Final() {
  byte r;
  timeout ->
  atomic {
    flush(EXPIRER);
    r = 0;
    do
    :: r < NREQ ->
       assert(!rec[r]);
       assert(!admitted[r] || ends[r] == 1 || wiped[r]);
       r++
    :: else -> break
    od;
    assert(resv[0] == 0 && resv[1] == 0);
    assert(accepted[0] == ledger[0] + lostCrash[0] && accepted[1] == ledger[1] + lostCrash[1]);
    printf("OP final %d %d %d %d\n", spent[0], resv[0], spent[1], resv[1])
  }
}

init {
  seeded[0] = true; seeded[1] = true;  /* the ledger is empty: both windows seeded at 0 */
  atomic {
    run Replica(0); run Replica(1); run Replica(2);
    run Expirer(); run Restart(); run Final()
  }
}

/* Safety, at every step: no overspend in Redis's view; no request closed
 * twice; every accepted cost is in the ledger, in a writer queue, or was lost
 * in a crashed replica's commit window; before any restart the counters hold
 * exactly the accepted costs. */
#define NOOVERSPEND (spent[0] + resv[0] <= LIMIT && spent[1] + resv[1] <= LIMIT)
#define ONCE (ends[0] <= 1 && ends[1] <= 1 && ends[2] <= 1 && ends[3] <= 1)
#define NOLOSS (accepted[0] == ledger[0] + QSUM(0) + lostCrash[0] && accepted[1] == ledger[1] + QSUM(1) + lostCrash[1])
#define EXACT (restarts > 0 || (spent[0] == accepted[0] && spent[1] == accepted[1]))

#ifndef RESTARTLOSS
ltl safe { [] (NOOVERSPEND && ONCE && NOLOSS && EXACT) }
ltl nooverspend { [] NOOVERSPEND }
#else
ltl restartloss { [] (lostRestart[0] == 0 && lostRestart[1] == 0) }
#endif
