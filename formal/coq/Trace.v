(* Trace.v — runs the transcribed kernel on an operation sequence and prints
   its decisions and final counters as a list of integers. The Go test
   formal/coqtrace_test.go writes sequences that use it and compares the
   output with kernel.State and with the Redis scripts. No theorems here. *)

Require Import ZArith List.
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

(* One operation's output. Admission: 1 admitted reason scope max_tokens clamped
   reserved; settlement: 2 ok cost reserved; expiry: 3 count (id cost)... *)
Definition stepOp (s : State) (o : Op) : State * list Z :=
  match o with
  | OAdmit now req =>
      let '(s', d) := Admit s now req in
      (s', [1; b2z (Admitted d); reasonZ (DReason d); optZ (DScope d); DMaxTokens d;
            b2z (Clamped d); DReserved d])
  | OSettle now id u st =>
      let '(s', r) := Settle s id u st in
      (s', match r with Some x => [2; 1; SCost x; SReserved x] | None => [2; 0; 0; 0] end)
  | OExpire now =>
      let '(s', out) := Expire s now in
      (s', 3 :: Z.of_nat (length out) :: flat_map (fun x => [Z.of_nat (SID x); SCost x]) out)
  end.

Fixpoint run (s : State) (ops : list Op) : State * list Z :=
  match ops with
  | [] => (s, [])
  | o :: os => let '(s1, z) := stepOp s o in let '(s2, zs) := run s1 os in (s2, z ++ zs)
  end.

(* The final counters: 4, then per scope its in-flight count and, per period,
   spent and reserved; then the number of open reservations. *)
Definition observe (s : State) (refs : list ScopeRef) (periods : list Period) : list Z :=
  4 :: flat_map (fun r => InFlight s r :: flat_map (fun p => let '(a, b) := UsageOf s r p in [a; b]) periods) refs
    ++ [Z.of_nat (Pending s)].

Definition trace (ops : list Op) (refs : list ScopeRef) (periods : list Period) : list Z :=
  let '(s, zs) := run NewState ops in zs ++ observe s refs periods.
