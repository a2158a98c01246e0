(* Trace.v — runs the transcribed kernel on an operation sequence and prints
   its decisions and final counters as a list of integers. The Go test
   formal/coqtrace_test.go writes sequences that use it and compares the
   output with kernel.State and with the Redis scripts. No theorems here.

   The kernel state has no TTL clock (Kernel.v, Forget); the trace keeps it
   beside the state as Go's State does (s.ttls): per scope with a TTL (a
   run's), the time of its last admission or settlement, and an expiry is
   ExpireTTL with the scopes that clock finds idle. *)

Require Import ZArith List Bool.
Require Import Tollgate.Kernel.
Import ListNotations.
Open Scope Z_scope.

Inductive Op :=
| OAdmit (now : Z) (req : AdmitRequest)
| OSettle (now : Z) (id : nat) (u : Usage) (st : Status)
| OExpire (now : Z).

Definition b2z (b : bool) : Z := if b then 1 else 0.

(* kernel.Reason's values *)
Definition reasonZ (r : Reason) : Z :=
  match r with
  | ReasonOK => 0 | ReasonKeyExpired => 1 | ReasonModelNotAllowed => 2 | ReasonRequestLimit => 3
  | ReasonTokenLimit => 4 | ReasonParallelLimit => 5 | ReasonBudgetExceeded => 6 | ReasonDuplicate => 7
  end.

Definition optZ (o : option nat) : Z := match o with Some n => Z.of_nat n | None => -1 end.

(* The TTL of ref in ttls (0: none). *)
Fixpoint ttlOf (ttls : list (ScopeRef * Z)) (r : ScopeRef) : Z :=
  match ttls with
  | [] => 0
  | (r', t) :: ttls' => if Nat.eqb r r' then t else ttlOf ttls' r
  end.

(* The TTL clock: (scope, last admission or settlement) of the scopes with a
   TTL that an admission made known. touch moves a scope's time to now
   (add: an admission, which starts tracking it; else a close, which moves
   only a tracked one: Go's st.ttl > 0). *)
Fixpoint touch (tl : list (ScopeRef * Z)) (r : ScopeRef) (now : Z) (add : bool) : list (ScopeRef * Z) :=
  match tl with
  | [] => if add then [(r, now)] else []
  | (r', l) :: tl' => if Nat.eqb r r' then (r', Z.max l now) :: tl' else (r', l) :: touch tl' r now add
  end.

Definition touchAll (tl : list (ScopeRef * Z)) (rs : list ScopeRef) (now : Z) (add : bool) :=
  fold_left (fun tl r => touch tl r now add) rs tl.

(* One operation's output. Admission: 1 admitted reason scope max_tokens clamped
   reserved; settlement: 2 ok cost reserved; expiry: 3 count (id cost)... *)
Definition stepOp (ttls : list (ScopeRef * Z)) (st : State * list (ScopeRef * Z)) (o : Op)
    : (State * list (ScopeRef * Z)) * list Z :=
  let '(s, tl) := st in
  match o with
  | OAdmit now req =>
      let '(s', d) := Admit s now req in
      let withTTL := filter (fun r => 0 <? ttlOf ttls r) (map Ref (Scopes req)) in
      ((s', if Admitted d then touchAll tl withTTL now true else tl),
       [1; b2z (Admitted d); reasonZ (DReason d); optZ (DScope d); DMaxTokens d;
        b2z (Clamped d); DReserved d])
  | OSettle now id u st =>
      let '(s', r) := Settle s id u st in
      match r with
      | Some x => ((s', touchAll tl (SScopes x) now false), [2; 1; SCost x; SReserved x])
      | None => ((s', tl), [2; 0; 0; 0])
      end
  | OExpire now =>
      (* Go: the lease loop, then the scopes idle for their TTL with nothing in flight. *)
      let '(s1, out) := Expire s now in
      let tl1 := touchAll tl (flat_map SScopes out) now false in
      let due := fun p : ScopeRef * Z => (snd p + ttlOf ttls (fst p) <=? now) && (InFlight s1 (fst p) =? 0) in
      let idle := map fst (filter due tl1) in
      let '(s', out') := ExpireTTL s now idle in
      ((s', filter (fun p => negb (due p)) tl1),
       3 :: Z.of_nat (length out') :: flat_map (fun x => [Z.of_nat (SID x); SCost x]) out')
  end.

Fixpoint run (ttls : list (ScopeRef * Z)) (st : State * list (ScopeRef * Z)) (ops : list Op)
    : (State * list (ScopeRef * Z)) * list Z :=
  match ops with
  | [] => (st, [])
  | o :: os => let '(st1, z) := stepOp ttls st o in let '(st2, zs) := run ttls st1 os in (st2, z ++ zs)
  end.

(* The final counters: 4, then per scope its in-flight count and, per period,
   spent and reserved; then the number of open reservations. *)
Definition observe (s : State) (refs : list ScopeRef) (periods : list Period) : list Z :=
  4 :: flat_map (fun r => InFlight s r :: flat_map (fun p => let '(a, b) := UsageOf s r p in [a; b]) periods) refs
    ++ [Z.of_nat (Pending s)].

(* ttls: the scopes with a TTL and theirs (Limits.TTL, in the lease clock's unit). *)
Definition trace (ops : list Op) (refs : list ScopeRef) (periods : list Period) (ttls : list (ScopeRef * Z)) : list Z :=
  let '((s, _), zs) := run ttls (NewState, []) ops in zs ++ observe s refs periods.
