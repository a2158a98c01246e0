(* Ledger.v — the group commit's coalescing (store/groupcommit/totals.go):
   applying a batch coalesced per (scope, hour) gives the same spend rows as
   applying its settlements one at a time, in any order.

   Abstractions: a ledger entry is its request id, scopes, hour bucket
   (Hour(EndedAt)), cost and total tokens; the spend rows are a function from
   (scope, hour) to (cost, requests, tokens); equality of rows is pointwise.
   Totals' final sort is a permutation of its result (totals_perm covers any
   order), and its index map is the search of addTo. *)

Require Import ZArith List Lia Bool Permutation.
Require Import Tollgate.Kernel.
Import ListNotations.
Open Scope Z_scope.

Record LedgerEntry := mkEntry {
  RequestID : nat; EScopes : list ScopeRef; EHour : Z; ECost : Money; ETokens : Z }.

(* groupcommit.Total *)
Record Total := mkTotal { TScope : ScopeRef; THour : Z; TCost : Money; TRequests : Z; TTokens : Z }.

(* The search-or-append of Totals' index map (`j, ok := idx[k]`). *)
Fixpoint addTo (out : list Total) (r : ScopeRef) (h : Z) (c k : Z) : list Total :=
  match out with
  | [] => [mkTotal r h c 1 k]
  | t :: out' =>
      if Nat.eqb (TScope t) r && Z.eqb (THour t) h
      then mkTotal r h (TCost t + c) (TRequests t + 1) (TTokens t + k) :: out'
      else t :: addTo out' r h c k
  end.

(* One entry of Totals' loop: counted once per scope it is charged to. *)
Definition addEntry (out : list Total) (e : LedgerEntry) : list Total :=
  fold_left (fun out r => addTo out r (EHour e) (ECost e) (ETokens e)) (EScopes e) out.

(* Totals (before its sort) *)
Definition Totals (batch : list LedgerEntry) : list Total := fold_left addEntry batch [].

(* Unique: the entries whose request id did not appear earlier in the batch. *)
Fixpoint uniqueFrom (seen : list nat) (batch : list LedgerEntry) : list LedgerEntry :=
  match batch with
  | [] => []
  | e :: rest =>
      if existsb (Nat.eqb (RequestID e)) seen then uniqueFrom seen rest
      else e :: uniqueFrom (RequestID e :: seen) rest
  end.
Definition Unique (batch : list LedgerEntry) : list LedgerEntry := uniqueFrom [] batch.

(* ---------- the spend rows ---------- *)

Definition Row := (Z * Z * Z)%type.
Definition Table := ScopeRef -> Z -> Row.
Definition vadd (a b : Row) : Row :=
  let '(c1, n1, k1) := a in let '(c2, n2, k2) := b in (c1 + c2, n1 + n2, k1 + k2).

(* Adding to one row (the SQL `UPDATE ... SET cost = cost + $1 ...`). *)
Definition apply1 (t : Table) (r : ScopeRef) (h : Z) (v : Row) : Table :=
  fun r' h' => if Nat.eqb r' r && Z.eqb h' h then vadd (t r' h') v else t r' h'.

Definition applyTotal (t : Table) (x : Total) : Table :=
  apply1 t (TScope x) (THour x) (TCost x, TRequests x, TTokens x).

(* Applying one settlement by itself: one request on every scope it is charged to. *)
Definition applyEntry (t : Table) (e : LedgerEntry) : Table :=
  fold_left (fun t r => apply1 t r (EHour e) (ECost e, 1, ETokens e)) (EScopes e) t.

Definition teq (a b : Table) : Prop := forall r h, a r h = b r h.

Lemma vadd_comm3 : forall a b c, vadd (vadd a b) c = vadd (vadd a c) b.
Proof. intros [[a1 a2] a3] [[b1 b2] b3] [[c1 c2] c3]. simpl. f_equal; [f_equal|]; lia. Qed.

Lemma vadd_assoc : forall a b c, vadd (vadd a b) c = vadd a (vadd b c).
Proof. intros [[a1 a2] a3] [[b1 b2] b3] [[c1 c2] c3]. simpl. f_equal; [f_equal|]; lia. Qed.

Lemma apply1_cong : forall t t' r h v, teq t t' -> teq (apply1 t r h v) (apply1 t' r h v).
Proof. intros t t' r h v H r' h'. unfold apply1. rewrite H. reflexivity. Qed.

Lemma apply1_comm : forall t r1 h1 v1 r2 h2 v2,
  teq (apply1 (apply1 t r1 h1 v1) r2 h2 v2) (apply1 (apply1 t r2 h2 v2) r1 h1 v1).
Proof.
  intros t r1 h1 v1 r2 h2 v2 r h. unfold apply1.
  destruct (Nat.eqb r r1 && Z.eqb h h1), (Nat.eqb r r2 && Z.eqb h h2); auto. apply vadd_comm3.
Qed.

Lemma apply1_merge : forall t r h v1 v2,
  teq (apply1 (apply1 t r h v1) r h v2) (apply1 t r h (vadd v1 v2)).
Proof.
  intros t r h v1 v2 r' h'. unfold apply1.
  destruct (Nat.eqb r' r && Z.eqb h' h); auto. apply vadd_assoc.
Qed.

Lemma fold_cong : forall {X} (F : Table -> X -> Table) l t t',
  (forall t t' x, teq t t' -> teq (F t x) (F t' x)) -> teq t t' ->
  teq (fold_left F l t) (fold_left F l t').
Proof. intros X F l. induction l; simpl; intros; auto. Qed.

Lemma teq_trans : forall a b c, teq a b -> teq b c -> teq a c.
Proof. unfold teq. intros. congruence. Qed.
Lemma teq_sym : forall a b, teq a b -> teq b a.
Proof. unfold teq. intros. auto. Qed.

Lemma applyTotal_cong : forall t t' x, teq t t' -> teq (applyTotal t x) (applyTotal t' x).
Proof. intros. apply apply1_cong. auto. Qed.

Lemma applyEntry_cong : forall t t' e, teq t t' -> teq (applyEntry t e) (applyEntry t' e).
Proof. intros. unfold applyEntry. apply fold_cong; auto. intros. apply apply1_cong. auto. Qed.

(* Applying a list of row additions commutes with one more addition. *)
Lemma fold_apply1_comm : forall {X} (F : Table -> X -> Table) l t r h v,
  (forall t t' x, teq t t' -> teq (F t x) (F t' x)) ->
  (forall t x, teq (F (apply1 t r h v) x) (apply1 (F t x) r h v)) ->
  teq (fold_left F l (apply1 t r h v)) (apply1 (fold_left F l t) r h v).
Proof.
  intros X F l. induction l as [|x l IH]; simpl; intros t r h v Hc Hx; [intros ? ?; auto|].
  eapply teq_trans; [apply fold_cong; [exact Hc|apply Hx]|]. apply IH; auto.
Qed.

Lemma applyTotal_apply1 : forall t x r h v,
  teq (applyTotal (apply1 t r h v) x) (apply1 (applyTotal t x) r h v).
Proof. intros. unfold applyTotal. apply apply1_comm. Qed.

Lemma applyTotal_addTo : forall out t r h c k,
  teq (fold_left applyTotal (addTo out r h c k) t) (apply1 (fold_left applyTotal out t) r h (c, 1, k)).
Proof.
  induction out as [|x out IH]; simpl; intros t r h c k; [intros ? ?; reflexivity|].
  destruct (Nat.eqb_spec (TScope x) r), (Z.eqb_spec (THour x) h); simpl; try (apply IH).
  subst. unfold applyTotal at 2.
  eapply teq_trans; [|apply fold_apply1_comm; [apply applyTotal_cong|intros; apply applyTotal_apply1]].
  apply fold_cong; [apply applyTotal_cong|].
  unfold applyTotal. simpl. apply teq_sym.
  eapply teq_trans; [apply apply1_merge|]. intros ? ?. reflexivity.
Qed.

Lemma addEntry_ok : forall scs out t h c k,
  teq (fold_left applyTotal (fold_left (fun out r => addTo out r h c k) scs out) t)
      (fold_left (fun t r => apply1 t r h (c, 1, k)) scs (fold_left applyTotal out t)).
Proof.
  induction scs as [|r scs IH]; simpl; intros out t h c k; [intros ? ?; reflexivity|].
  eapply teq_trans; [apply IH|]. apply fold_cong; [intros; apply apply1_cong; auto|].
  apply applyTotal_addTo.
Qed.

Lemma totals_gen : forall batch out t,
  teq (fold_left applyTotal (fold_left addEntry batch out) t)
      (fold_left applyEntry batch (fold_left applyTotal out t)).
Proof.
  induction batch as [|e batch IH]; simpl; intros out t; [intros ? ?; reflexivity|].
  eapply teq_trans; [apply IH|]. apply fold_cong; [apply applyEntry_cong|].
  unfold addEntry, applyEntry. apply addEntry_ok.
Qed.

(* Batched = sequential: the coalesced totals of a batch add to the spend rows
   exactly what its settlements add one at a time. *)
Theorem batched_eq_sequential : forall batch t,
  teq (fold_left applyTotal (Totals batch) t) (fold_left applyEntry batch t).
Proof. intros. unfold Totals. apply totals_gen. Qed.

Lemma fold_perm : forall {X} (F : Table -> X -> Table) l l' t,
  (forall t t' x, teq t t' -> teq (F t x) (F t' x)) ->
  (forall t a b, teq (F (F t a) b) (F (F t b) a)) ->
  Permutation l l' -> teq (fold_left F l t) (fold_left F l' t).
Proof.
  intros X F l l' t Hc Hs H. revert t. induction H; simpl; intros t.
  - intros ? ?. reflexivity.
  - apply IHPermutation.
  - apply fold_cong; auto.
  - eapply teq_trans; [apply IHPermutation1|apply IHPermutation2].
Qed.

Lemma applyEntry_apply1 : forall e t r h v,
  teq (applyEntry (apply1 t r h v) e) (apply1 (applyEntry t e) r h v).
Proof.
  intros. unfold applyEntry. apply fold_apply1_comm; [intros; apply apply1_cong; auto|].
  intros. apply apply1_comm.
Qed.

Lemma applyEntry_fold : forall b la h v t,
  teq (applyEntry (fold_left (fun t r => apply1 t r h v) la t) b)
      (fold_left (fun t r => apply1 t r h v) la (applyEntry t b)).
Proof.
  intros b. induction la as [|r la IH]; simpl; intros h v t; [intros ? ?; reflexivity|].
  eapply teq_trans; [apply IH|]. apply fold_cong; [intros; apply apply1_cong; auto|].
  apply applyEntry_apply1.
Qed.

Lemma applyEntry_swap : forall t a b, teq (applyEntry (applyEntry t a) b) (applyEntry (applyEntry t b) a).
Proof. intros t a b. unfold applyEntry at 2. apply applyEntry_fold. Qed.

(* In any order: the settlements of a batch give the same rows whatever
   order they are applied in ... *)
Theorem sequential_any_order : forall batch batch' t, Permutation batch batch' ->
  teq (fold_left applyEntry batch t) (fold_left applyEntry batch' t).
Proof.
  intros. apply fold_perm; auto; [apply applyEntry_cong|apply applyEntry_swap].
Qed.

(* ... and so do the totals in any order (Totals sorts them). *)
Theorem totals_any_order : forall batch ts t, Permutation (Totals batch) ts ->
  teq (fold_left applyTotal ts t) (fold_left applyEntry batch t).
Proof.
  intros batch ts t H. eapply teq_trans; [|apply batched_eq_sequential].
  apply teq_sym. apply fold_perm; auto; [apply applyTotal_cong|].
  intros. unfold applyTotal at 1 3. apply apply1_comm.
Qed.

(* Unique keeps one entry per request id: a settlement appended twice is
   written once. *)
Lemma uniqueFrom_fresh : forall batch seen e, In e (uniqueFrom seen batch) -> ~ In (RequestID e) seen.
Proof.
  induction batch as [|x batch IH]; simpl; intros seen e H; [contradiction|].
  destruct (existsb (Nat.eqb (RequestID x)) seen) eqn:E.
  - eapply IH; eauto.
  - destruct H as [<-|H].
    + intros Hin. assert (existsb (Nat.eqb (RequestID x)) seen = true)
        by (apply existsb_exists; exists (RequestID x); split; auto; apply Nat.eqb_refl). congruence.
    + intros Hin. apply (IH _ _ H). right. auto.
Qed.

Theorem Unique_nodup : forall batch, NoDup (map RequestID (Unique batch)).
Proof.
  unfold Unique. intros batch. generalize (@nil nat) as seen.
  induction batch as [|x batch IH]; simpl; intros seen; [constructor|].
  destruct (existsb (Nat.eqb (RequestID x)) seen); auto.
  simpl. constructor; auto. intros Hin. apply in_map_iff in Hin as (e & He & Hin).
  apply uniqueFrom_fresh in Hin. apply Hin. left. auto.
Qed.

Theorem Unique_sublist : forall batch e, In e (Unique batch) -> In e batch.
Proof.
  unfold Unique. intros batch. generalize (@nil nat) as seen.
  induction batch as [|x batch IH]; simpl; intros seen e H; auto.
  destruct (existsb (Nat.eqb (RequestID x)) seen); [right; eapply IH; eauto|].
  destruct H; [left; auto|right; eapply IH; eauto].
Qed.
