(* Kernel.v — a Gallina transcription of Tollgate's accounting kernel
   (kernel/cost.go, kernel/state.go), one Coq definition per Go function,
   each with a comment naming its Go counterpart.

   Abstractions (also listed in docs/accounting.md):
   - Money and token counts are Z: unbounded, so satAdd's saturation at the
     int64 bounds and the u128 accumulator's saturation are never reached.
   - ScopeRef and Period are nat ids (kind+id, and the period's reset rule).
   - Time is the lease clock only: the model lives inside one window of every
     period and one UTC minute, so roll/reset of a window and rollMinute are
     the identity and the tpm correction of Settle always applies.
   - The maps of State (scopes, open) are a function and a list; the lease
     heap is the open list (Expire takes due reservations in list order).
   - A Limits' ExpiresAt and Models checks are the booleans Go computes for
     the request (as the Redis script receives them).
   - Decision keeps Admitted, Reason, Scope, MaxTokens, Clamped, Reserved;
     RetryAfter and RateLimit (headers) are not modelled. *)

Require Import ZArith List Lia Bool.
Import ListNotations.
Open Scope Z_scope.

(* ---------- kernel/types.go ---------- *)

Definition Money := Z.
Definition ScopeRef := nat.
Definition Period := nat.
(* PeriodTotal: the window every scope tracks. *)
Definition PeriodTotal : Period := 0%nat.

Record Price := mkPrice {
  pInput : Money; pCachedInput : Money; pCacheWrite : Money;
  pOutput : Money; pReasoning : Money }.

Record Usage := mkUsage {
  uInput : Z; uCachedInput : Z; uCacheWrite : Z; uOutput : Z; uReasoning : Z }.

(* Usage.Total *)
Definition Total (u : Usage) : Z :=
  uInput u + uCachedInput u + uCacheWrite u + uOutput u + uReasoning u.

Inductive BudgetMode := Strict | Estimate.
Inductive Shortfall := Clamp | Reject.

Record BudgetWindow := mkBudget { bLimit : Money; bPeriod : Period }.

Record Limits := mkLimits {
  Budgets : list BudgetWindow;
  RPM : Z; TPM : Z; MaxParallel : Z;
  KeyExpired : bool;   (* !ExpiresAt.IsZero() && !now.Before(ExpiresAt) *)
  ModelDenied : bool;  (* len(Models) > 0 && !slices.Contains(Models, req.Model) *)
  Mode : BudgetMode; LShortfall : Shortfall }.

Record Scope := mkScope { Ref : ScopeRef; Lim : option Limits }.

Record AdmitRequest := mkAdmitRequest {
  ID : nat; Scopes : list Scope;
  PromptBytes : Z; MaxTokens : Z; DefaultMaxTokens : Z;
  RPrice : Price; Lease : Z }.

Inductive Reason := ReasonOK | ReasonKeyExpired | ReasonModelNotAllowed
  | ReasonRequestLimit | ReasonTokenLimit | ReasonParallelLimit
  | ReasonBudgetExceeded | ReasonDuplicate.

Record Decision := mkDecision {
  Admitted : bool; DReason : Reason; DScope : option ScopeRef;
  DMaxTokens : Z; Clamped : bool; DReserved : Money }.

Inductive Status := StatusCompleted | StatusAborted | StatusFailed | StatusExpired.

Record Settlement := mkSettlement {
  SID : nat; SScopes : list ScopeRef; SCost : Money; SReserved : Money; SStatus : Status }.

(* ---------- kernel/cost.go ---------- *)

(* tokensPerPrice *)
Definition tokensPerPrice : Z := 1000000.

(* u128.addMul: adds n×p, counting negative factors as zero. *)
Definition addMul (acc n p : Z) : Z :=
  if (n <=? 0) || (p <=? 0) then acc else acc + n * p.

(* u128.ceilPerMillion *)
Definition ceilPerMillion (a : Z) : Money :=
  let q := a / tokensPerPrice in
  if a mod tokensPerPrice =? 0 then q else q + 1.

(* Price.withDefaults *)
Definition withDefaults (p : Price) : Price :=
  let i := Z.max (pInput p) 0 in
  let o := Z.max (pOutput p) 0 in
  mkPrice i
    (if pCachedInput p <=? 0 then i else pCachedInput p)
    (if pCacheWrite p <=? 0 then i else pCacheWrite p)
    o
    (if pReasoning p <=? 0 then o else pReasoning p).

(* Price.bounds *)
Definition bounds (p : Price) : Money * Money :=
  let p := withDefaults p in
  (Z.max (Z.max (pInput p) (pCachedInput p)) (pCacheWrite p),
   Z.max (pOutput p) (pReasoning p)).

(* Cost *)
Definition Cost (p : Price) (u : Usage) : Money :=
  let p := withDefaults p in
  let acc := addMul 0 (uInput u) (pInput p) in
  let acc := addMul acc (uCachedInput u) (pCachedInput p) in
  let acc := addMul acc (uCacheWrite u) (pCacheWrite p) in
  let acc := addMul acc (uOutput u) (pOutput p) in
  let acc := addMul acc (uReasoning u) (pReasoning p) in
  ceilPerMillion acc.

(* WorstCost *)
Definition WorstCost (p : Price) (promptBytes outputTokens : Z) : Money :=
  let '(i, o) := bounds p in
  ceilPerMillion (addMul (addMul 0 promptBytes i) outputTokens o).

(* The worst cost of Admit with n output tokens:
     worstAcc := inCost; worstAcc.addMul(n, outPrice); worstAcc.ceilPerMillion()
   (also worstOf in accounting/redis_scripts.go and redis_util.go). *)
Definition worstOf (inCost : Z) (n : Z) (outPrice : Money) : Money :=
  ceilPerMillion (addMul inCost n outPrice).

(* millionths *)
Definition millionths (m : Money) : Z := if m <=? 0 then 0 else m * tokensPerPrice.

(* affordable: the largest output bound m ≤ n whose worst cost fits in avail,
   or -1 when none does. *)
Definition affordable (avail : Money) (inCost : Z) (outPrice : Money) (n : Z) : Z :=
  if avail <? 0 then -1 else
  let room := millionths avail in
  if room <? inCost then -1 else
  if outPrice <=? 0 then n else
  let q := (room - inCost) / outPrice in
  if q >=? n then n else q.

(* ---------- kernel/state.go ---------- *)

(* window: spent and reserved of one period's current window. *)
Record window := mkWindow { wPeriod : Period; since : nat; spent : Money; reserved : Money }.

(* scopeState *)
Record scopeState := mkScopeState {
  sRef : ScopeRef; inFlight : Z; requests : Z; tokens : Z; windows : list window }.

(* reservation *)
Record reservation := mkReservation {
  rID : nat; rScopes : list ScopeRef; rPrice : Price; rWorst : Money;
  rReserved : Money; rTokens : Z; rEpoch : nat; rDeadline : Z }.

(* State: scopes map, open reservations (map and lease heap), epoch. *)
Record State := mkState {
  scopes : ScopeRef -> option scopeState; open : list reservation; epoch : nat }.

(* NewState *)
Definition NewState : State := mkState (fun _ => None) [] 0.

Definition setScope (s : State) (r : ScopeRef) (st : scopeState) : State :=
  mkState (fun r' => if Nat.eqb r' r then Some st else scopes s r') (open s) (epoch s).

Definition withWindows (st : scopeState) (ws : list window) : scopeState :=
  mkScopeState (sRef st) (inFlight st) (requests st) (tokens st) ws.

(* State.scope: returns the state of ref, creating it with its total window. *)
Definition scope (s : State) (ref : ScopeRef) : State :=
  match scopes s ref with
  | Some _ => s
  | None =>
      let e := S (epoch s) in
      let st := mkScopeState ref 0 0 0 [mkWindow PeriodTotal e 0 0] in
      mkState (fun r' => if Nat.eqb r' ref then Some st else scopes s r') (open s) e
  end.

(* scopeState.find *)
Fixpoint find (ws : list window) (p : Period) : option window :=
  match ws with
  | [] => None
  | w :: ws' => if Nat.eqb (wPeriod w) p then Some w else find ws' p
  end.

(* State.reset: a new window of p with zero counters (its bounds are not modelled). *)
Definition reset (e : nat) (p : Period) : window := mkWindow p e 0 0.

(* State.window: the scope's window of p, created if missing. roll is the
   identity in this time-free model. *)
Definition window_ (s : State) (ref : ScopeRef) (p : Period) : State * window :=
  match scopes s ref with
  | None => (s, reset (epoch s) p) (* unreachable: Admit made the scope first *)
  | Some st =>
      match find (windows st) p with
      | Some w => (s, w)
      | None =>
          let e := S (epoch s) in
          let w := reset e p in
          (mkState (fun r' => if Nat.eqb r' ref then Some (withWindows st (windows st ++ [w]))
                              else scopes s r') (open s) e, w)
      end
  end.

(* The scope state of ref (the zero one when missing). *)
Definition lookup (s : State) (ref : ScopeRef) : scopeState :=
  match scopes s ref with Some st => st | None => mkScopeState ref 0 0 0 [] end.

(* Admit's budget loop over one scope's budgets (the inner `for _, b := range lim.Budgets`). *)
Fixpoint budgetLoop (s : State) (ref : ScopeRef) (i : nat) (bs : list BudgetWindow)
    (mode : BudgetMode) (short : Shortfall) (inCost outPrice n : Z) (fail : option nat)
    : State * Z * option nat :=
  match bs with
  | [] => (s, n, fail)
  | b :: bs' =>
      let '(s', w) := window_ s ref (bPeriod b) in
      match fail with
      | Some _ => budgetLoop s' ref i bs' mode short inCost outPrice n fail
      | None =>
          match mode with
          | Estimate =>
              if bLimit b <=? spent w
              then budgetLoop s' ref i bs' mode short inCost outPrice n (Some i)
              else budgetLoop s' ref i bs' mode short inCost outPrice n None
          | Strict =>
              let fit := affordable (bLimit b - spent w - reserved w) inCost outPrice n in
              if (match short with Reject => fit <? n | Clamp => false end) || (fit <? 1)
              then budgetLoop s' ref i bs' mode short inCost outPrice n (Some i)
              else budgetLoop s' ref i bs' mode short inCost outPrice fit None
          end
      end
  end.

(* Admit's budget loop over the scopes (the outer `for i := range req.Scopes`). *)
Fixpoint scopeLoop (s : State) (scs : list Scope) (i : nat)
    (mode : BudgetMode) (short : Shortfall) (inCost outPrice n : Z) (fail : option nat)
    : State * Z * option nat :=
  match scs with
  | [] => (s, n, fail)
  | sc :: scs' =>
      match Lim sc with
      | None => scopeLoop s scs' (S i) mode short inCost outPrice n fail
      | Some lim =>
          let '(s', n', fail') := budgetLoop s (Ref sc) i (Budgets lim) mode short inCost outPrice n fail in
          scopeLoop s' scs' (S i) mode short inCost outPrice n' fail'
      end
  end.

Definition isFail (fail : option nat) (i : nat) : bool :=
  match fail with Some j => Nat.eqb i j | None => false end.

(* Admit's checks loop: the first failing scope decides. *)
Fixpoint checks (s : State) (scs : list Scope) (i : nat) (toks : Z) (fail : option nat)
    : option (Reason * ScopeRef) :=
  match scs with
  | [] => None
  | sc :: scs' =>
      match Lim sc with
      | None => checks s scs' (S i) toks fail
      | Some lim =>
          let st := lookup s (Ref sc) in
          if KeyExpired lim then Some (ReasonKeyExpired, Ref sc)
          else if ModelDenied lim then Some (ReasonModelNotAllowed, Ref sc)
          else if (0 <? MaxParallel lim) && (MaxParallel lim <=? inFlight st) then Some (ReasonParallelLimit, Ref sc)
          else if (0 <? RPM lim) && (RPM lim <=? requests st) then Some (ReasonRequestLimit, Ref sc)
          else if (0 <? TPM lim) && (TPM lim <? tokens st + toks) then Some (ReasonTokenLimit, Ref sc)
          else if isFail fail i then Some (ReasonBudgetExceeded, Ref sc)
          else checks s scs' (S i) toks fail
      end
  end.

Definition mapWindows (f : window -> window) (st : scopeState) : list window := map f (windows st).

(* Admit's reserve step on one scope (`for _, st := range res.scopes`). *)
Definition reserveScope (rsv toks : Z) (st : scopeState) : scopeState :=
  mkScopeState (sRef st) (inFlight st + 1) (requests st + 1) (tokens st + toks)
    (mapWindows (fun w => mkWindow (wPeriod w) (since w) (spent w) (reserved w + rsv)) st).

Definition updScope (s : State) (r : ScopeRef) (f : scopeState -> scopeState) : State :=
  match scopes s r with
  | Some st => setScope s r (f st)
  | None => s
  end.

Definition refused (why : Reason) (sc : option ScopeRef) : Decision :=
  mkDecision false why sc 0 false 0.

(* The mode and shortfall of the request come from Scopes[0].Limits. *)
Definition modeOf (req : AdmitRequest) : BudgetMode * Shortfall :=
  match Scopes req with
  | sc :: _ => match Lim sc with Some l => (Mode l, LShortfall l) | None => (Strict, Clamp) end
  | [] => (Strict, Clamp)
  end.

(* DefaultLease: 15 minutes, in nanoseconds (the time unit of the model). *)
Definition DefaultLease : Z := 900000000000.

(* defaultOutputBound *)
Definition defaultOutputBound : Z := 4096.

Definition outBoundOf (req : AdmitRequest) : Z :=
  if 0 <? MaxTokens req then MaxTokens req
  else if 0 <? DefaultMaxTokens req then DefaultMaxTokens req
  else defaultOutputBound.

Definition isOpen (s : State) (id : nat) : bool := existsb (fun r => Nat.eqb (rID r) id) (open s).

(* State.Admit *)
Definition Admit (s : State) (now : Z) (req : AdmitRequest) : State * Decision :=
  let '(mode, short) := modeOf req in
  let inBound := Z.max (PromptBytes req) 0 in
  let outBound := outBoundOf req in
  let '(inPrice, outPrice) := bounds (RPrice req) in
  if isOpen s (ID req) then
    (s, refused ReasonDuplicate (match Scopes req with sc :: _ => Some (Ref sc) | [] => None end))
  else
  let refs := map Ref (Scopes req) in
  let s1 := fold_left scope refs s in
  let inCost := addMul 0 inBound inPrice in
  let '(s2, n0, fail) := scopeLoop s1 (Scopes req) 0 mode short inCost outPrice outBound None in
  let n := match fail with Some _ => outBound | None => n0 end in
  let worst := worstOf inCost n outPrice in
  let toks := match mode with
              | Estimate => inBound / 4 + Z.min (inBound mod 4) 1
              | Strict => inBound + n end in
  match checks s2 (Scopes req) 0 toks fail with
  | Some (why, r) => (s2, refused why (Some r))
  | None =>
      let rsv := match mode with Estimate => 0 | Strict => worst end in
      let s3 := fold_left (fun s r => updScope s r (reserveScope rsv toks)) refs s2 in
      let lease := if Lease req <=? 0 then DefaultLease else Lease req in
      let res := mkReservation (ID req) refs (RPrice req) worst rsv toks (epoch s3) (now + lease) in
      (mkState (scopes s3) (open s3 ++ [res]) (epoch s3),
       mkDecision true ReasonOK None n (n <? outBound) rsv)
  end.

(* State.close's work on one scope. *)
Definition closeScope (res : reservation) (cost : Money) (fixTokens : bool) (actual : Z)
    (st : scopeState) : scopeState :=
  mkScopeState (sRef st) (inFlight st - 1) (requests st)
    (if fixTokens then Z.max (tokens st + actual - rTokens res) 0 else tokens st)
    (mapWindows (fun w => mkWindow (wPeriod w) (since w) (spent w + cost)
                  (if Nat.leb (since w) (rEpoch res) then reserved w - rReserved res else reserved w)) st).

(* State.close: removes res from the open set and applies its end to every scope. *)
Definition close (s : State) (res : reservation) (cost : Money) (fixTokens : bool) (actual : Z) : State :=
  let s' := mkState (scopes s) (filter (fun r => negb (Nat.eqb (rID r) (rID res))) (open s)) (epoch s) in
  fold_left (fun s r => updScope s r (closeScope res cost fixTokens actual)) (rScopes res) s'.

Fixpoint findRes (rs : list reservation) (id : nat) : option reservation :=
  match rs with
  | [] => None
  | r :: rs' => if Nat.eqb (rID r) id then Some r else findRes rs' id
  end.

(* State.settlement *)
Definition settlement (res : reservation) (cost : Money) (st : Status) : Settlement :=
  mkSettlement (rID res) (rScopes res) cost (rReserved res) st.

(* State.Settle *)
Definition Settle (s : State) (id : nat) (u : Usage) (st : Status) : State * option Settlement :=
  match findRes (open s) id with
  | None => (s, None)
  | Some res =>
      let cost := Cost (rPrice res) u in
      (close s res cost true (Total u), Some (settlement res cost st))
  end.

Fixpoint firstDue (rs : list reservation) (now : Z) : option reservation :=
  match rs with
  | [] => None
  | r :: rs' => if rDeadline r <=? now then Some r else firstDue rs' now
  end.

(* State.Expire: settles every reservation whose lease ended by now with its
   worst cost (the loop over the lease heap; fuel = the number open). *)
Fixpoint expireLoop (fuel : nat) (s : State) (now : Z) : State * list Settlement :=
  match fuel with
  | O => (s, [])
  | S fuel' =>
      match firstDue (open s) now with
      | None => (s, [])
      | Some res =>
          let s' := close s res (rWorst res) false 0 in
          let '(s'', out) := expireLoop fuel' s' now in
          (s'', settlement res (rWorst res) StatusExpired :: out)
      end
  end.

Definition Expire (s : State) (now : Z) : State * list Settlement :=
  expireLoop (length (open s)) s now.

(* State.Expire's last loop: a scope with a TTL (run scopes, Limits.TTL) is
   forgotten when nothing is in flight on it (Go: inFlight == 0, which counts
   the open reservations naming the scope — the kernel's property tests check
   InFlight against that count) and it has been idle for its TTL. The TTL
   clock is not modelled: any idle scope may be forgotten at any step. *)
Definition Forget (s : State) (ref : ScopeRef) : State :=
  if existsb (fun res => existsb (Nat.eqb ref) (rScopes res)) (open s) then s
  else mkState (fun r' => if Nat.eqb r' ref then None else scopes s r') (open s) (epoch s).

(* State.Expire as a whole: the lease loop (Expire above), then the TTL loop
   forgets every scope of idle (Forget: unless an open reservation names it).
   idle stands for the TTL clock (Go: the scopes of s.ttls idle since their
   last admission or settlement + TTL, nothing in flight), which the kernel
   state does not model: formal/coq/Trace.v computes it as Go does, and
   expireTTL_steps (State.v) holds whatever scopes it names. *)
Definition ExpireTTL (s : State) (now : Z) (idle : list ScopeRef) : State * list Settlement :=
  let '(s', out) := Expire s now in (fold_left Forget idle s', out).

(* State.Usage: spent and reserved of ref's window of p; zero when not tracked. *)
Definition UsageOf (s : State) (ref : ScopeRef) (p : Period) : Money * Money :=
  match scopes s ref with
  | None => (0, 0)
  | Some st => match find (windows st) p with
               | None => (0, 0)
               | Some w => (spent w, reserved w)
               end
  end.

(* State.InFlight *)
Definition InFlight (s : State) (ref : ScopeRef) : Z :=
  match scopes s ref with Some st => inFlight st | None => 0 end.

(* State.Pending *)
Definition Pending (s : State) : nat := length (open s).
