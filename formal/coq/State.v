(* State.v — theorems about State (kernel/state.go): no overspend, all or
   nothing, settle exactly once. *)

Require Import ZArith List Lia Bool.
Require Import Tollgate.Kernel Tollgate.Cost.
Import ListNotations.
Open Scope Z_scope.

(* ---------- observations ---------- *)

Definition trackedb (s : State) (r : ScopeRef) (p : Period) : bool :=
  match scopes s r with
  | Some st => match find (windows st) p with Some _ => true | None => false end
  | None => false
  end.

Definition exists_scope (s : State) (r : ScopeRef) : Prop := scopes s r <> None.

(* The counters admission checks besides the budgets. *)
Definition counters (s : State) (r : ScopeRef) : Z * Z * Z :=
  let st := lookup s r in (inFlight st, requests st, tokens st).

(* ---------- lists ---------- *)

Lemma find_In : forall ws p w, find ws p = Some w -> In w ws /\ wPeriod w = p.
Proof.
  induction ws as [|a ws IH]; simpl; intros p w H; [discriminate|].
  destruct (Nat.eqb_spec (wPeriod a) p).
  - inversion H; subst; auto.
  - destruct (IH p w H); auto.
Qed.

Lemma find_map : forall g ws p, (forall w, wPeriod (g w) = wPeriod w) ->
  find (map g ws) p = option_map g (find ws p).
Proof.
  intros g ws p Hg. induction ws as [|a ws IH]; simpl; auto.
  rewrite Hg. destruct (Nat.eqb (wPeriod a) p); auto.
Qed.

Lemma find_app_some : forall ws l p w, find ws p = Some w -> find (ws ++ l) p = Some w.
Proof.
  induction ws as [|a ws IH]; simpl; intros l p w H; [discriminate|].
  destruct (Nat.eqb (wPeriod a) p); auto.
Qed.

Lemma find_app_none : forall ws w p, find ws p = None ->
  find (ws ++ [w]) p = if Nat.eqb (wPeriod w) p then Some w else None.
Proof.
  induction ws as [|a ws IH]; simpl; intros w p H.
  - destruct (Nat.eqb (wPeriod w) p); auto.
  - destruct (Nat.eqb (wPeriod a) p); [discriminate|auto].
Qed.

Lemma fold_preserve : forall {A B} (P : A -> Prop) (F : A -> B -> A) (l : list B) (s : A),
  (forall s b, In b l -> P s -> P (F s b)) -> P s -> P (fold_left F l s).
Proof.
  intros A B P F l. induction l as [|b l IH]; simpl; intros s H Hs; [auto|].
  apply IH; intros; apply H; auto.
Qed.

Lemma fold_preserve2 : forall {A B} (R : A -> A -> Prop) (F : A -> B -> A) (l : list B) (s : A),
  (forall s, R s s) -> (forall s1 s2 s3, R s1 s2 -> R s2 s3 -> R s1 s3) ->
  (forall s b, In b l -> R s (F s b)) -> R s (fold_left F l s).
Proof.
  intros A B R F l. induction l as [|b l IH]; simpl; intros s Hr Ht H; [auto|].
  eapply Ht; [apply H; auto|]. apply IH; auto.
Qed.

(* ---------- shape-preserving scope updates (reserve, close) ---------- *)

Definition shape (f : scopeState -> scopeState) (g : window -> window) : Prop :=
  (forall st, windows (f st) = map g (windows st)) /\
  (forall w, wPeriod (g w) = wPeriod w /\ since (g w) = since w).

Lemma updScope_scopes : forall s r f r',
  scopes (updScope s r f) r' = if Nat.eqb r' r then option_map f (scopes s r) else scopes s r'.
Proof.
  intros. unfold updScope. destruct (scopes s r) eqn:E; simpl.
  - destruct (Nat.eqb_spec r' r); auto.
  - destruct (Nat.eqb_spec r' r); subst; auto.
Qed.

Lemma updScope_open : forall s r f, open (updScope s r f) = open s.
Proof. intros. unfold updScope. destruct (scopes s r); reflexivity. Qed.

Lemma updScope_epoch : forall s r f, epoch (updScope s r f) = epoch s.
Proof. intros. unfold updScope. destruct (scopes s r); reflexivity. Qed.

Lemma shape_window : forall f g s r r' st' w, shape f g ->
  scopes (updScope s r f) r' = Some st' -> In w (windows st') ->
  exists st w0, scopes s r' = Some st /\ In w0 (windows st) /\ since w = since w0 /\ wPeriod w = wPeriod w0.
Proof.
  intros f g s r r' st' w [Hw Hg] H Hin. rewrite updScope_scopes in H.
  destruct (Nat.eqb_spec r' r).
  - subst. destruct (scopes s r) as [st|] eqn:E; simpl in H; [|discriminate].
    inversion H; subst. rewrite Hw in Hin. apply in_map_iff in Hin as (w0 & <- & Hin).
    exists st, w0. destruct (Hg w0). auto.
  - exists st', w. auto.
Qed.

Lemma shape_tracked : forall f g s r r' p, shape f g ->
  trackedb (updScope s r f) r' p = trackedb s r' p.
Proof.
  intros f g s r r' p [Hw Hg]. unfold trackedb. rewrite updScope_scopes.
  destruct (Nat.eqb_spec r' r); auto. subst.
  destruct (scopes s r) as [st|]; simpl; auto.
  rewrite Hw, find_map by (intros; apply Hg). destruct (find (windows st) p); auto.
Qed.

Lemma shape_exists : forall f s r r', exists_scope (updScope s r f) r' <-> exists_scope s r'.
Proof.
  intros. unfold exists_scope. rewrite updScope_scopes.
  destruct (Nat.eqb_spec r' r); subst; [destruct (scopes s r)|]; simpl; split; congruence.
Qed.

Lemma shape_usage : forall f g s r r' p, shape f g ->
  UsageOf (updScope s r f) r' p =
  if Nat.eqb r' r then
    match scopes s r with
    | Some st => match find (windows st) p with Some w => (spent (g w), reserved (g w)) | None => (0, 0) end
    | None => (0, 0)
    end
  else UsageOf s r' p.
Proof.
  intros f g s r r' p [Hw Hg]. unfold UsageOf. rewrite updScope_scopes.
  destruct (Nat.eqb_spec r' r); auto. subst.
  destruct (scopes s r) as [st|]; simpl; auto.
  rewrite Hw, find_map by (intros; apply Hg). destruct (find (windows st) p); auto.
Qed.

Lemma trackedb_spec : forall s r p, trackedb s r p = true <->
  exists st w, scopes s r = Some st /\ find (windows st) p = Some w.
Proof.
  intros. unfold trackedb. destruct (scopes s r) as [st|]; split.
  - destruct (find (windows st) p) eqn:E; [eauto|discriminate].
  - intros (st' & w & H1 & H2). inversion H1; subst. rewrite H2. reflexivity.
  - discriminate.
  - intros (st' & w & H1 & _). discriminate.
Qed.

(* ---------- the invariant ---------- *)

(* A fixed configuration: the budgets every scope carries in every request. *)
Definition Config := ScopeRef -> list BudgetWindow.

Record Inv (cfg : Config) (s : State) : Prop := {
  (* no overspend: spent + reserved ≤ limit in every budget window *)
  inv_budget : forall r b, In b (cfg r) ->
    fst (UsageOf s r (bPeriod b)) + snd (UsageOf s r (bPeriod b)) <= bLimit b;
  (* strict mode: what a reservation holds is its worst cost *)
  inv_strict : forall res, In res (open s) -> rReserved res = rWorst res;
  (* a reservation is held by every window of its scopes (none reset or added since) *)
  inv_since_res : forall res r st w, In res (open s) -> In r (rScopes res) ->
    scopes s r = Some st -> In w (windows st) -> (since w <= rEpoch res)%nat;
  (* the scopes of a reservation exist and track every configured budget *)
  inv_tracked : forall res r, In res (open s) -> In r (rScopes res) ->
    exists_scope s r /\ forall b, In b (cfg r) -> trackedb s r (bPeriod b) = true;
  inv_since : forall r st w, scopes s r = Some st -> In w (windows st) -> (since w <= epoch s)%nat
}.

Definition cfgOK (cfg : Config) : Prop := forall r b, In b (cfg r) -> 0 <= bLimit b.

Lemma inv_new : forall cfg, cfgOK cfg -> Inv cfg NewState.
Proof.
  intros cfg H. constructor; simpl; try contradiction; try discriminate.
  intros r b Hb. unfold UsageOf. simpl. apply H in Hb. lia.
Qed.

(* Updates that keep the shape of every window keep the invariant's
   structural parts. *)
Lemma shape_inv_rest : forall cfg f g s r, shape f g -> Inv cfg s ->
  (forall res, In res (open s) -> rReserved res = rWorst res) /\
  (forall res r' st w, In res (open s) -> In r' (rScopes res) ->
     scopes (updScope s r f) r' = Some st -> In w (windows st) -> (since w <= rEpoch res)%nat) /\
  (forall res r', In res (open s) -> In r' (rScopes res) ->
     exists_scope (updScope s r f) r' /\
     forall b, In b (cfg r') -> trackedb (updScope s r f) r' (bPeriod b) = true) /\
  (forall r' st w, scopes (updScope s r f) r' = Some st -> In w (windows st) ->
     (since w <= epoch (updScope s r f))%nat).
Proof.
  intros cfg f g s r Hs I. split; [|split; [|split]].
  - apply (inv_strict _ _ I).
  - intros res r' st w Hres Hr' H Hw.
    destruct (shape_window f g s r r' st w Hs H Hw) as (st0 & w0 & H0 & Hw0 & -> & _).
    eapply inv_since_res; eauto.
  - intros res r' Hres Hr'. destruct (inv_tracked _ _ I res r' Hres Hr') as [He Ht].
    split; [apply shape_exists; auto|]. intros b Hb. rewrite (shape_tracked f g); auto.
  - intros r' st w H Hw. rewrite updScope_epoch.
    destruct (shape_window f g s r r' st w Hs H Hw) as (st0 & w0 & H0 & Hw0 & -> & _).
    eapply inv_since; eauto.
Qed.

(* ---------- Settle and Expire keep the invariant ---------- *)

Definition closeG (res : reservation) (cost : Money) (w : window) : window :=
  mkWindow (wPeriod w) (since w) (spent w + cost)
    (if Nat.leb (since w) (rEpoch res) then reserved w - rReserved res else reserved w).

Lemma closeScope_shape : forall res cost fx actual,
  shape (closeScope res cost fx actual) (closeG res cost).
Proof. intros. split; [reflexivity | intros; simpl; auto]. Qed.

Lemma close_inv : forall cfg s res cost fx actual,
  Inv cfg s -> In res (open s) -> cost <= rReserved res ->
  Inv cfg (close s res cost fx actual).
Proof.
  intros cfg s res cost fx actual I Hres Hc. unfold close.
  set (s0 := mkState (scopes s) (filter (fun r => negb (Nat.eqb (rID r) (rID res))) (open s)) (epoch s)).
  assert (I0 : Inv cfg s0 /\ forall r st w, In r (rScopes res) -> scopes s0 r = Some st ->
                 In w (windows st) -> (since w <= rEpoch res)%nat).
  { split; [constructor|]; simpl.
    - apply (inv_budget _ _ I).
    - intros res' H. apply filter_In in H as [H _]. apply (inv_strict _ _ I); auto.
    - intros res' r st w H. apply filter_In in H as [H _]. eapply inv_since_res; eauto.
    - intros res' r H. apply filter_In in H as [H _]. apply (inv_tracked _ _ I); auto.
    - apply (inv_since _ _ I).
    - intros. eapply inv_since_res; eauto. }
  match goal with |- Inv cfg (fold_left ?F ?l ?x) =>
    cut ((fun y => Inv cfg y /\ forall r st w, In r (rScopes res) -> scopes y r = Some st ->
                 In w (windows st) -> (since w <= rEpoch res)%nat) (fold_left F l x));
    [intros [HI _]; exact HI|] end.
  apply fold_preserve; [|exact I0]. intros s' r Hr [I' Q].
  pose proof (closeScope_shape res cost fx actual) as Hs.
  destruct (shape_inv_rest cfg _ _ s' r Hs I') as (A & B & C & D).
  split; [constructor|].
  - intros r' b Hb. rewrite (shape_usage _ _ _ _ _ _ Hs).
    destruct (Nat.eqb_spec r' r); [subst|apply (inv_budget _ _ I'); auto].
    pose proof (inv_budget _ _ I' r b Hb) as Hb'. unfold UsageOf in Hb'.
    destruct (scopes s' r) as [st|] eqn:E; auto.
    destruct (find (windows st) (bPeriod b)) as [w|] eqn:F; auto. simpl.
    destruct (find_In _ _ _ F) as [Hw _].
    rewrite (proj2 (Nat.leb_le _ _)) by (eapply Q; eauto). simpl in Hb'. lia.
  - rewrite updScope_open. exact A.
  - rewrite updScope_open. exact B.
  - rewrite updScope_open. exact C.
  - exact D.
  - intros r0 st w H0 H H1.
    destruct (shape_window _ _ s' r r0 st w Hs H H1) as (st0 & w0 & E0 & Hw0 & -> & _).
    eapply Q; eauto.
Qed.

Lemma findRes_spec : forall rs id res, findRes rs id = Some res -> In res rs /\ rID res = id.
Proof.
  induction rs as [|a rs IH]; simpl; intros id res H; [discriminate|].
  destruct (Nat.eqb_spec (rID a) id).
  - inversion H; subst; auto.
  - destruct (IH id res H); auto.
Qed.

Lemma firstDue_spec : forall rs now res, firstDue rs now = Some res -> In res rs /\ rDeadline res <= now.
Proof.
  induction rs as [|a rs IH]; simpl; intros now res H; [discriminate|].
  destruct (Z.leb_spec (rDeadline a) now).
  - inversion H; subst; auto.
  - destruct (IH now res H); auto.
Qed.

Lemma firstDue_none : forall rs now, firstDue rs now = None -> forall res, In res rs -> now < rDeadline res.
Proof.
  induction rs as [|a rs IH]; simpl; intros now H res Hin; [contradiction|].
  destruct (Z.leb_spec (rDeadline a) now); [discriminate|].
  destruct Hin; subst; auto.
Qed.

Theorem settle_inv : forall cfg s id u st,
  Inv cfg s ->
  (forall res, findRes (open s) id = Some res -> Cost (rPrice res) u <= rReserved res) ->
  Inv cfg (fst (Settle s id u st)).
Proof.
  intros cfg s id u st I H. unfold Settle.
  destruct (findRes (open s) id) as [res|] eqn:E; simpl; auto.
  apply close_inv; auto. apply (findRes_spec _ _ _ E).
Qed.

Lemma expireLoop_inv : forall cfg fuel s now, Inv cfg s -> Inv cfg (fst (expireLoop fuel s now)).
Proof.
  intros cfg. induction fuel as [|fuel IH]; simpl; intros s now I; auto.
  destruct (firstDue (open s) now) as [res|] eqn:E; simpl; auto.
  destruct (firstDue_spec _ _ _ E) as [Hin _].
  destruct (expireLoop fuel (close s res (rWorst res) false 0) now) as [s'' out] eqn:E2.
  simpl. replace s'' with (fst (expireLoop fuel (close s res (rWorst res) false 0) now)) by (rewrite E2; auto).
  apply IH. apply close_inv; auto. rewrite (inv_strict _ _ I res Hin). lia.
Qed.

Theorem expire_inv : forall cfg s now, Inv cfg s -> Inv cfg (fst (Expire s now)).
Proof. intros. apply expireLoop_inv; auto. Qed.

(* ---------- settle exactly once ---------- *)

Lemma close_open : forall s res cost fx actual,
  open (close s res cost fx actual) = filter (fun r => negb (Nat.eqb (rID r) (rID res))) (open s).
Proof.
  intros. unfold close.
  match goal with |- open (fold_left ?F ?l ?x) = ?o =>
    apply (fold_preserve (fun y => open y = o)); [|reflexivity] end.
  intros s' r _ H. rewrite updScope_open. exact H.
Qed.

Lemma findRes_filter : forall rs id,
  findRes (filter (fun r => negb (Nat.eqb (rID r) id)) rs) id = None.
Proof.
  induction rs as [|a rs IH]; simpl; intros id; auto.
  destruct (Nat.eqb_spec (rID a) id); simpl; auto.
  destruct (Nat.eqb_spec (rID a) id); [contradiction|auto].
Qed.

(* Settling the same reservation twice changes nothing the second time. *)
Theorem settle_once : forall s id u st s' x u' st',
  Settle s id u st = (s', Some x) -> Settle s' id u' st' = (s', None).
Proof.
  intros s id u st s' x u' st' H. unfold Settle in H.
  destruct (findRes (open s) id) as [res|] eqn:E; [|discriminate].
  inversion H; subst. destruct (findRes_spec _ _ _ E) as [_ Hid].
  unfold Settle. rewrite close_open, Hid, findRes_filter. reflexivity.
Qed.

(* Settling an id that is not open changes nothing. *)
Theorem settle_not_open : forall s id u st,
  findRes (open s) id = None -> Settle s id u st = (s, None).
Proof. intros. unfold Settle. rewrite H. reflexivity. Qed.

Lemma filter_length_le' : forall {A} (f : A -> bool) l, (length (filter f l) <= length l)%nat.
Proof. intros A f l. induction l as [|a l IH]; simpl; auto. destruct (f a); simpl; lia. Qed.

Lemma filter_length_lt : forall {A} (f : A -> bool) l x,
  In x l -> f x = false -> (length (filter f l) < length l)%nat.
Proof.
  intros A f l. induction l as [|a l IH]; simpl; intros x Hin Hf; [contradiction|].
  destruct Hin as [<-|Hin].
  - rewrite Hf. pose proof (filter_length_le' f l) as H'. lia.
  - destruct (f a); simpl; [apply IH in Hin; auto; lia|].
    pose proof (filter_length_le' f l). lia.
Qed.

Lemma expireLoop_post : forall fuel s now, (length (open s) <= fuel)%nat ->
  (forall res, In res (open (fst (expireLoop fuel s now))) -> now < rDeadline res) /\
  incl (open (fst (expireLoop fuel s now))) (open s).
Proof.
  induction fuel as [|fuel IH]; simpl; intros s now Hl.
  - destruct (open s); simpl in *; [split; [contradiction|apply incl_refl]|lia].
  - destruct (firstDue (open s) now) as [res|] eqn:E.
    + destruct (firstDue_spec _ _ _ E) as [Hin _].
      destruct (expireLoop fuel (close s res (rWorst res) false 0) now) as [s'' out] eqn:E2. simpl.
      assert (Hlt : (length (open (close s res (rWorst res) false 0)) < length (open s))%nat).
      { rewrite close_open. eapply filter_length_lt; eauto. simpl. rewrite Nat.eqb_refl. reflexivity. }
      destruct (IH (close s res (rWorst res) false 0) now ltac:(lia)) as [H1 H2].
      rewrite E2 in H1, H2. simpl in H1, H2. split; auto.
      eapply incl_tran; [exact H2|]. rewrite close_open. apply incl_filter.
    + simpl. split; [apply firstDue_none; auto|apply incl_refl].
Qed.

Lemma NoDup_map_inj : forall {A B} (f : A -> B) l x y,
  NoDup (map f l) -> In x l -> In y l -> f x = f y -> x = y.
Proof.
  intros A B f l. induction l as [|a l IH]; simpl; intros x y Hn Hx Hy He; [contradiction|].
  inversion Hn as [|? ? Hnot Hn']; subst.
  destruct Hx as [<-|Hx], Hy as [<-|Hy]; auto.
  - exfalso. apply Hnot. rewrite He. apply in_map. auto.
  - exfalso. apply Hnot. rewrite <- He. apply in_map. auto.
Qed.

(* A reservation expired by Expire is never charged again: settling it late
   changes nothing (it was charged its worst cost once, by Expire). *)
Theorem expire_then_settle : forall s now res u st,
  NoDup (map rID (open s)) -> In res (open s) -> rDeadline res <= now ->
  Settle (fst (Expire s now)) (rID res) u st = (fst (Expire s now), None).
Proof.
  intros s now res u st Hn Hin Hd. apply settle_not_open.
  destruct (expireLoop_post (length (open s)) s now (le_n _)) as [H1 H2].
  unfold Expire. set (s' := fst (expireLoop (length (open s)) s now)) in *.
  destruct (findRes (open s') (rID res)) as [res'|] eqn:E; auto.
  destruct (findRes_spec _ _ _ E) as [Hin' Hid].
  assert (res' = res) by (eapply NoDup_map_inj; eauto).
  subst. apply H1 in Hin'. lia.
Qed.

(* ---------- Admit: scope and window creation ---------- *)

(* Observations that creating scopes and windows leaves alone. *)
Definition sameObs (s s' : State) : Prop :=
  (forall r p, UsageOf s' r p = UsageOf s r p) /\ (forall r, counters s' r = counters s r) /\
  open s' = open s.

(* What creating scopes and windows only adds to. *)
Definition grows (s s' : State) : Prop :=
  (forall r, exists_scope s r -> exists_scope s' r) /\
  (forall r p, trackedb s r p = true -> trackedb s' r p = true) /\ (epoch s <= epoch s')%nat.

Lemma sameObs_refl : forall s, sameObs s s.
Proof. unfold sameObs. auto. Qed.
Lemma sameObs_trans : forall a b c, sameObs a b -> sameObs b c -> sameObs a c.
Proof. unfold sameObs. intros a b c (H1 & H2 & H3) (H4 & H5 & H6). repeat split; congruence. Qed.
Lemma grows_refl : forall s, grows s s.
Proof. unfold grows. auto. Qed.
Lemma grows_trans : forall a b c, grows a b -> grows b c -> grows a c.
Proof. unfold grows. intros a b c (H1 & H2 & H3) (H4 & H5 & H6). repeat split; auto. lia. Qed.

Lemma scope_scopes : forall s r r', scopes (scope s r) r' =
  match scopes s r with
  | Some _ => scopes s r'
  | None => if Nat.eqb r' r then Some (mkScopeState r 0 0 0 [mkWindow PeriodTotal (S (epoch s)) 0 0])
            else scopes s r'
  end.
Proof. intros. unfold scope. destruct (scopes s r); reflexivity. Qed.

Lemma scope_obs : forall s r, sameObs s (scope s r) /\ grows s (scope s r) /\ exists_scope (scope s r) r.
Proof.
  intros s r. unfold sameObs, grows, exists_scope, UsageOf, counters, lookup, trackedb.
  rewrite !scope_scopes.
  destruct (scopes s r) as [st|] eqn:E.
  - unfold scope. rewrite E. repeat split; auto; congruence.
  - repeat split.
    + intros r' p. rewrite scope_scopes, E. destruct (Nat.eqb_spec r' r); subst; [rewrite E|]; auto;
      simpl; destruct p; auto.
    + intros r'. rewrite scope_scopes, E. destruct (Nat.eqb_spec r' r); subst; [rewrite E|]; auto.
    + unfold scope. rewrite E. reflexivity.
    + intros r' H. rewrite scope_scopes, E. destruct (Nat.eqb_spec r' r); [discriminate|auto].
    + intros r' p Ht. rewrite scope_scopes, E. destruct (Nat.eqb_spec r' r); subst; [rewrite E in Ht; discriminate|auto].
    + unfold scope. rewrite E. simpl. lia.
    + rewrite Nat.eqb_refl. discriminate.
Qed.

Lemma scope_inv : forall cfg s r, Inv cfg s -> Inv cfg (scope s r).
Proof.
  intros cfg s r I. destruct (scope_obs s r) as [(U & C & O) [(G1 & G2 & G3) _]].
  constructor.
  - intros r' b Hb. rewrite U. apply (inv_budget _ _ I); auto.
  - rewrite O. apply (inv_strict _ _ I).
  - rewrite O. intros res r' st w Hres Hr' H Hw. rewrite scope_scopes in H.
    destruct (scopes s r) as [st0|] eqn:E; [eapply inv_since_res; eauto|].
    destruct (Nat.eqb_spec r' r).
    + subst. exfalso. destruct (inv_tracked _ _ I res r Hres Hr') as [Hex _]. contradiction.
    + eapply inv_since_res; eauto.
  - rewrite O. intros res r' Hres Hr'. destruct (inv_tracked _ _ I res r' Hres Hr') as [Hex Ht].
    split; [apply G1; auto|]. intros b Hb. apply G2. auto.
  - intros r' st w H Hw. rewrite scope_scopes in H.
    destruct (scopes s r) as [st0|] eqn:E.
    + pose proof (inv_since _ _ I r' st w H Hw). lia.
    + destruct (Nat.eqb_spec r' r).
      * inversion H; subst. simpl in Hw. destruct Hw as [<-|[]]. unfold scope. rewrite E. simpl. lia.
      * pose proof (inv_since _ _ I r' st w H Hw). lia.
Qed.

Lemma window_obs : forall s r p s' w, window_ s r p = (s', w) ->
  sameObs s s' /\ grows s s' /\ (spent w, reserved w) = UsageOf s r p /\
  (exists_scope s r -> trackedb s' r p = true).
Proof.
  intros s r p s' w H. unfold window_ in H.
  destruct (scopes s r) as [st|] eqn:E.
  - destruct (find (windows st) p) as [w0|] eqn:F.
    + inversion H; subst. split; [apply sameObs_refl|split; [apply grows_refl|split]].
      * unfold UsageOf. rewrite E, F. auto.
      * intros _. unfold trackedb. rewrite E, F. auto.
    + inversion H; subst. clear H.
      split; [split; [|split]|split; [split; [|split]|split]].
      * intros r' p'. unfold UsageOf. simpl.
        destruct (Nat.eqb_spec r' r); subst; [rewrite E|auto]. simpl.
        destruct (find (windows st) p') as [w1|] eqn:F1.
        -- erewrite find_app_some; eauto.
        -- rewrite find_app_none by auto. simpl. destruct (Nat.eqb p p'); auto.
      * intros r'. unfold counters, lookup. simpl.
        destruct (Nat.eqb_spec r' r); subst; [rewrite E|]; auto.
      * reflexivity.
      * intros r' H'. unfold exists_scope. simpl. destruct (Nat.eqb r' r); congruence.
      * intros r' p' H'. unfold trackedb in *. simpl.
        destruct (Nat.eqb_spec r' r); subst; [rewrite E in H'|auto]. simpl.
        destruct (find (windows st) p') eqn:F'; [|discriminate]. erewrite find_app_some; eauto.
      * simpl. lia.
      * unfold UsageOf. rewrite E, F. auto.
      * intros _. unfold trackedb. simpl. rewrite Nat.eqb_refl. simpl.
        rewrite find_app_none by auto. simpl. rewrite Nat.eqb_refl. auto.
  - inversion H; subst. split; [apply sameObs_refl|split; [apply grows_refl|split]].
    + unfold UsageOf. rewrite E. auto.
    + intros Hc. contradiction.
Qed.

Lemma window_inv : forall cfg s r p s' w, window_ s r p = (s', w) -> Inv cfg s ->
  (exists b, In b (cfg r) /\ bPeriod b = p) -> Inv cfg s'.
Proof.
  intros cfg s r p s' w H I (b & Hb & Hp). destruct (window_obs s r p s' w H) as [(U & C & O) _].
  unfold window_ in H. destruct (scopes s r) as [st|] eqn:E; [|inversion H; subst; auto].
  destruct (find (windows st) p) as [w0|] eqn:F; [inversion H; subst; auto|].
  inversion H; subst. clear H.
  constructor; simpl.
  - intros r' b' Hb'. rewrite U. apply (inv_budget _ _ I); auto.
  - apply (inv_strict _ _ I).
  - intros res r' st' w' Hres Hr' H' Hw'. destruct (Nat.eqb_spec r' r).
    + subst. exfalso. destruct (inv_tracked _ _ I res r Hres Hr') as [_ Ht].
      specialize (Ht b Hb). unfold trackedb in Ht. rewrite E, F in Ht. discriminate.
    + eapply inv_since_res; eauto.
  - intros res r' Hres Hr'. destruct (inv_tracked _ _ I res r' Hres Hr') as [Hex Ht].
    destruct (Nat.eqb_spec r' r).
    + subst. exfalso. specialize (Ht b Hb). unfold trackedb in Ht. rewrite E, F in Ht. discriminate.
    + unfold exists_scope, trackedb in *. simpl. rewrite (proj2 (Nat.eqb_neq r' r) n). auto.
  - intros r' st' w' H' Hw'. destruct (Nat.eqb_spec r' r).
    + inversion H'; subst. simpl in Hw'. apply in_app_or in Hw' as [Hw'|[<-|[]]].
      * pose proof (inv_since _ _ I r st w' E Hw'). lia.
      * simpl. lia.
    + pose proof (inv_since _ _ I r' st' w' H' Hw'). lia.
Qed.

(* ---------- Admit: the budget loops ---------- *)

(* What a budget window of r has left under the limit of b. *)
Definition avail (s : State) (r : ScopeRef) (b : BudgetWindow) : Z :=
  bLimit b - fst (UsageOf s r (bPeriod b)) - snd (UsageOf s r (bPeriod b)).

Lemma avail_same : forall s s' r b, sameObs s s' -> avail s' r b = avail s r b.
Proof. intros s s' r b (U & _ & _). unfold avail. rewrite U. reflexivity. Qed.

Definition loopFacts (s : State) (r : ScopeRef) (bs : list BudgetWindow)
    (inCost out n n' : Z) (fail fail' : option nat) : Prop :=
  fail' = None ->
  fail = None /\ n' <= n /\ (forall b, In b bs -> worstOf inCost n' out <= avail s r b) /\
  (forall m, 0 <= m <= n -> (forall b, In b bs -> worstOf inCost m out <= avail s r b) -> m <= n').

Lemma budgetLoop_obs : forall bs s r i mode short inCost out n fail s' n' fail',
  budgetLoop s r i bs mode short inCost out n fail = (s', n', fail') ->
  sameObs s s' /\ grows s s' /\
  (exists_scope s r -> forall b, In b bs -> trackedb s' r (bPeriod b) = true) /\
  (fail' = fail \/ fail' = Some i) /\
  (mode = Strict -> 0 <= inCost -> 0 <= out -> loopFacts s r bs inCost out n n' fail fail').
Proof.
  induction bs as [|b bs IH]; simpl; intros s r i mode short inCost out n fail s' n' fail' H.
  - inversion H; subst. split; [apply sameObs_refl|split; [apply grows_refl|split; [intros _ _ []|split; [auto|]]]].
    intros _ _ _ Hf. repeat split; auto; try lia. intros _ [].
  - destruct (window_ s r (bPeriod b)) as [s1 w] eqn:W.
    destruct (window_obs _ _ _ _ _ W) as (S1 & G1 & Uw & T1).
    assert (Hrec : forall n0 f0, budgetLoop s1 r i bs mode short inCost out n0 f0 = (s', n', fail') ->
      sameObs s s' /\ grows s s' /\
      (exists_scope s r -> forall b', In b' (b :: bs) -> trackedb s' r (bPeriod b') = true) /\
      (fail' = f0 \/ fail' = Some i) /\
      (mode = Strict -> 0 <= inCost -> 0 <= out -> loopFacts s1 r bs inCost out n0 n' f0 fail')).
    { intros n0 f0 H0. destruct (IH _ _ _ _ _ _ _ _ _ _ _ _ H0) as (S2 & G2 & T2 & F2 & L2).
      split; [eapply sameObs_trans; eauto|split; [eapply grows_trans; eauto|split; [|split; auto]]].
      intros Hex b' [<-|Hb'].
      + apply G2. apply T1. auto.
      + apply T2; auto. apply G1. auto. }
    destruct fail as [j|].
    + destruct (Hrec _ _ H) as (S2 & G2 & T2 & F2 & L2).
           refine (conj S2 (conj G2 (conj T2 (conj _ _)))); [tauto|].
      intros Hm Hi Ho Hf. destruct (L2 Hm Hi Ho Hf) as [Hc _]. discriminate.
    + destruct mode.
      * set (fit := affordable (bLimit b - spent w - reserved w) inCost out n) in *.
        destruct ((match short with Reject => fit <? n | Clamp => false end) || (fit <? 1)) eqn:C.
        -- destruct (Hrec _ _ H) as (S2 & G2 & T2 & F2 & L2).
           refine (conj S2 (conj G2 (conj T2 (conj _ _)))); [tauto|].
           intros Hm Hi Ho Hf. destruct (L2 Hm Hi Ho Hf) as [Hc _]. discriminate.
        -- destruct (Hrec _ _ H) as (S2 & G2 & T2 & F2 & L2).
           refine (conj S2 (conj G2 (conj T2 (conj _ _)))); [tauto|].
           intros _ Hi Ho Hf. destruct (L2 eq_refl Hi Ho Hf) as (_ & Hn & Hw & Hmax).
           apply orb_false_iff in C as [C1 C2]. apply Z.ltb_ge in C2.
           assert (Hav : bLimit b - spent w - reserved w = avail s r b)
             by (unfold avail; rewrite <- Uw; reflexivity).
           destruct (affordable_safe (bLimit b - spent w - reserved w) inCost out n Hi Ho ltac:(unfold fit in C2; lia))
             as [Hfn Hfw].
           fold fit in Hfn, Hfw. rewrite Hav in Hfw.
           split; [auto|split; [lia|split]].
           ++ intros b' [<-|Hb'].
              ** eapply Z.le_trans; [apply worstOf_mono; exact Hn|exact Hfw].
              ** rewrite <- (avail_same s s1) by auto. auto.
           ++ intros m Hm Hfits. apply Hmax.
              ** split; [lia|]. unfold fit. apply affordable_maximal; try lia.
                 rewrite Hav. apply Hfits. left. auto.
              ** intros b' Hb'. rewrite (avail_same s s1) by auto. apply Hfits. right. auto.
      * destruct (bLimit b <=? spent w).
        -- destruct (Hrec _ _ H) as (S2 & G2 & T2 & F2 & L2).
           refine (conj S2 (conj G2 (conj T2 (conj _ _)))); [tauto|]. intros Hm; discriminate.
        -- destruct (Hrec _ _ H) as (S2 & G2 & T2 & F2 & L2).
           refine (conj S2 (conj G2 (conj T2 (conj _ _)))); [tauto|]. intros Hm; discriminate.
Qed.

Lemma budgetLoop_inv : forall cfg bs s r i mode short inCost out n fail s' n' fail',
  budgetLoop s r i bs mode short inCost out n fail = (s', n', fail') ->
  Inv cfg s -> (forall b, In b bs -> In b (cfg r)) -> Inv cfg s'.
Proof.
  intros cfg. induction bs as [|b bs IH]; simpl; intros s r i mode short inCost out n fail s' n' fail' H I Hb.
  - inversion H; subst; auto.
  - destruct (window_ s r (bPeriod b)) as [s1 w] eqn:W.
    assert (I1 : Inv cfg s1) by (eapply window_inv; eauto).
    destruct fail; [eapply IH; eauto|].
    destruct mode; [destruct (_ || _)|destruct (_ <=? _)]; eapply IH; eauto.
Qed.

Lemma scopeLoop_obs : forall scs s i mode short inCost out n fail s' n' fail',
  scopeLoop s scs i mode short inCost out n fail = (s', n', fail') ->
  sameObs s s' /\ grows s s' /\
  (forall sc l, In sc scs -> Lim sc = Some l -> exists_scope s (Ref sc) ->
     forall b, In b (Budgets l) -> trackedb s' (Ref sc) (bPeriod b) = true) /\
  (fail' = fail \/ exists j sc l, nth_error scs j = Some sc /\ Lim sc = Some l /\ fail' = Some (i + j)%nat) /\
  (mode = Strict -> 0 <= inCost -> 0 <= out -> fail' = None ->
     fail = None /\ n' <= n /\
     forall sc l b, In sc scs -> Lim sc = Some l -> In b (Budgets l) ->
       worstOf inCost n' out <= avail s (Ref sc) b).
Proof.
  induction scs as [|sc scs IH]; simpl; intros s i mode short inCost out n fail s' n' fail' H.
  - inversion H; subst. split; [apply sameObs_refl|split; [apply grows_refl|split; [intros _ _ []|split; [left; auto|]]]].
    intros _ _ _ Hf. split; [auto|split; [lia|intros _ _ _ []]].
  - destruct (Lim sc) as [l|] eqn:L.
    + destruct (budgetLoop s (Ref sc) i (Budgets l) mode short inCost out n fail) as [[s1 n1] f1] eqn:B.
      destruct (budgetLoop_obs _ _ _ _ _ _ _ _ _ _ _ _ _ B) as (S1 & G1 & T1 & F1 & L1).
      destruct (IH _ _ _ _ _ _ _ _ _ _ _ H) as (S2 & G2 & T2 & F2 & L2).
      split; [eapply sameObs_trans; eauto|split; [eapply grows_trans; eauto|split; [|split]]].
      * intros sc' l' [<-|Hin] Hl Hex b Hb.
        -- rewrite L in Hl. inversion Hl; subst. apply G2. apply T1; auto.
        -- apply T2 with l'; auto. apply G1. auto.
      * destruct F2 as [ -> | (j & sc' & l' & Hn & Hl & ->)].
        -- destruct F1 as [ -> | -> ]; [left; auto|right]. exists 0%nat, sc, l. rewrite Nat.add_0_r. auto.
        -- right. exists (S j), sc', l'. rewrite Nat.add_succ_r. auto.
      * intros Hm Hi Ho Hf. destruct (L2 Hm Hi Ho Hf) as (Hf1 & Hn1 & Hw1).
        destruct (L1 Hm Hi Ho Hf1) as (Hf0 & Hn0 & Hw0 & _).
        split; [auto|split; [lia|]].
        intros sc' l' b [<-|Hin] Hl Hb.
        -- rewrite L in Hl. inversion Hl; subst.
           eapply Z.le_trans; [apply worstOf_mono; exact Hn1|]. apply Hw0. auto.
        -- rewrite <- (avail_same s s1) by auto. eapply Hw1; eauto.
    + destruct (IH _ _ _ _ _ _ _ _ _ _ _ H) as (S2 & G2 & T2 & F2 & L2).
      split; [auto|split; [auto|split; [|split]]].
      * intros sc' l' [<-|Hin] Hl; [congruence|]. eapply T2; eauto.
      * destruct F2 as [ -> | (j & sc' & l' & Hn & Hl & ->)]; [left; auto|].
        right. exists (S j), sc', l'. rewrite Nat.add_succ_r. auto.
      * intros Hm Hi Ho Hf. destruct (L2 Hm Hi Ho Hf) as (Hf1 & Hn1 & Hw1).
        split; [auto|split; [auto|]]. intros sc' l' b [<-|Hin] Hl Hb; [congruence|]. eapply Hw1; eauto.
Qed.

Lemma scopeLoop_inv : forall cfg scs s i mode short inCost out n fail s' n' fail',
  scopeLoop s scs i mode short inCost out n fail = (s', n', fail') ->
  Inv cfg s -> (forall sc l, In sc scs -> Lim sc = Some l -> forall b, In b (Budgets l) -> In b (cfg (Ref sc))) ->
  Inv cfg s'.
Proof.
  intros cfg. induction scs as [|sc scs IH]; simpl; intros s i mode short inCost out n fail s' n' fail' H I Hc.
  - inversion H; subst; auto.
  - destruct (Lim sc) as [l|] eqn:L.
    + destruct (budgetLoop s (Ref sc) i (Budgets l) mode short inCost out n fail) as [[s1 n1] f1] eqn:B.
      eapply IH; eauto. eapply budgetLoop_inv; eauto.
    + eapply IH; eauto.
Qed.

Lemma checks_none : forall scs s i toks fail, checks s scs i toks fail = None ->
  forall j sc l, nth_error scs j = Some sc -> Lim sc = Some l -> isFail fail (i + j) = false.
Proof.
  induction scs as [|sc scs IH]; simpl; intros s i toks fail H j sc' l Hn Hl.
  - destruct j; discriminate.
  - destruct j as [|j].
    + inversion Hn; subst. rewrite Hl in H. rewrite Nat.add_0_r.
      repeat match type of H with (if ?c then _ else _) = None => destruct c; [discriminate|] end.
      reflexivity.
    + replace (i + S j)%nat with (S i + j)%nat by lia. simpl in Hn. destruct (Lim sc) as [l0|].
      * repeat match type of H with (if ?c then _ else _) = None => destruct c; [discriminate|] end.
        eapply IH; eauto.
      * eapply IH; eauto.
Qed.

(* ---------- Admit: the reserve step ---------- *)

Definition memb (r : ScopeRef) (l : list ScopeRef) : bool := existsb (Nat.eqb r) l.

Lemma memb_In : forall r l, memb r l = true <-> In r l.
Proof.
  intros r l. unfold memb. rewrite existsb_exists. split.
  - intros (x & Hx & E). apply Nat.eqb_eq in E. subst. auto.
  - intros H. exists r. split; auto. apply Nat.eqb_refl.
Qed.

Definition reserveG (rsv : Z) (w : window) : window :=
  mkWindow (wPeriod w) (since w) (spent w) (reserved w + rsv).

Lemma reserveScope_shape : forall rsv toks, shape (reserveScope rsv toks) (reserveG rsv).
Proof. intros. split; [reflexivity | intros; simpl; auto]. Qed.

Definition existsb_scope (s : State) (r : ScopeRef) : bool :=
  match scopes s r with Some _ => true | None => false end.

Lemma reserve1 : forall s a rsv toks,
  let s' := updScope s a (reserveScope rsv toks) in
  (forall r p, UsageOf s' r p = (fst (UsageOf s r p),
      snd (UsageOf s r p) + if Nat.eqb r a && trackedb s r p then rsv else 0)) /\
  (forall r, InFlight s' r = InFlight s r + if Nat.eqb r a && existsb_scope s r then 1 else 0) /\
  (forall r, Nat.eqb r a = false -> counters s' r = counters s r).
Proof.
  intros s a rsv toks s'. split; [|split].
  - intros r p. unfold s'. rewrite (shape_usage _ _ _ _ _ _ (reserveScope_shape rsv toks)).
    destruct (Nat.eqb_spec r a); simpl.
    + subst. unfold UsageOf, trackedb. destruct (scopes s a); [|simpl; f_equal; lia].
      destruct (find (windows s0) p); simpl; f_equal; lia.
    + destruct (UsageOf s r p); simpl; f_equal; lia.
  - intros r. unfold s', InFlight, existsb_scope. rewrite updScope_scopes.
    destruct (Nat.eqb_spec r a); simpl.
    + subst. destruct (scopes s a); simpl; lia.
    + destruct (scopes s r); lia.
  - intros r Hr. unfold s', counters, lookup. rewrite updScope_scopes, Hr. reflexivity.
Qed.

Lemma reserve_fold : forall rsv toks l s, NoDup l ->
  let s' := fold_left (fun s r => updScope s r (reserveScope rsv toks)) l s in
  (forall r p, UsageOf s' r p = (fst (UsageOf s r p),
      snd (UsageOf s r p) + if memb r l && trackedb s r p then rsv else 0)) /\
  (forall r, InFlight s' r = InFlight s r + if memb r l && existsb_scope s r then 1 else 0) /\
  (forall r, memb r l = false -> counters s' r = counters s r) /\
  (forall r p, trackedb s' r p = trackedb s r p) /\
  (forall r, exists_scope s' r <-> exists_scope s r) /\
  (forall r, existsb_scope s' r = existsb_scope s r) /\
  (forall r st w, scopes s' r = Some st -> In w (windows st) ->
     exists st0 w0, scopes s r = Some st0 /\ In w0 (windows st0) /\ since w = since w0) /\
  open s' = open s /\ epoch s' = epoch s.
Proof.
  intros rsv toks. induction l as [|a l IH]; simpl; intros s Hn.
  - split; [intros r p; destruct (UsageOf s r p); simpl; f_equal; lia|].
    split; [intros; lia|]. split; [auto|]. split; [auto|]. split; [tauto|]. split; [auto|].
    split; [|auto]. intros r st w H Hw. exists st, w. auto.
  - inversion Hn as [|? ? Hnot Hn']; subst.
    set (s1 := updScope s a (reserveScope rsv toks)).
    destruct (reserve1 s a rsv toks) as (U1 & F1 & C1). fold s1 in U1, F1, C1.
    destruct (IH s1 Hn') as (U & F & C & T & E & EB & W & O & Ep).
    assert (T1 : forall r p, trackedb s1 r p = trackedb s r p)
      by (intros; apply (shape_tracked _ _ _ _ _ _ (reserveScope_shape rsv toks))).
    assert (EB1 : forall r, existsb_scope s1 r = existsb_scope s r).
    { intros r. unfold existsb_scope, s1. rewrite updScope_scopes.
      destruct (Nat.eqb_spec r a); [subst; destruct (scopes s a)|]; auto. }
    assert (Hx : forall r, Nat.eqb r a = true -> memb r l = false).
    { intros r Hr. apply Nat.eqb_eq in Hr. subst. destruct (memb a l) eqn:M; auto.
      apply memb_In in M. contradiction. }
    split; [|split; [|split; [|split; [|split; [|split; [|split; [|split]]]]]]].
    + intros r p. rewrite U, U1, T1. simpl. unfold memb. simpl. fold (memb r l).
      destruct (Nat.eqb r a) eqn:Ra; [rewrite (Hx r Ra)|]; simpl;
        destruct (trackedb s r p), (memb r l); simpl; f_equal; lia.
    + intros r. rewrite F, F1, EB1. unfold memb. simpl. fold (memb r l).
      destruct (Nat.eqb r a) eqn:Ra; [rewrite (Hx r Ra)|]; simpl;
        destruct (existsb_scope s r), (memb r l); simpl; lia.
    + intros r Hr. unfold memb in Hr. simpl in Hr. apply orb_false_iff in Hr as [Hr1 Hr2].
      rewrite C by auto. apply C1. auto.
    + intros r p. rewrite T. apply T1.
    + intros r. rewrite E. apply shape_exists.
    + intros r. rewrite EB. apply EB1.
    + intros r st w H Hw. destruct (W r st w H Hw) as (st1 & w1 & H1 & Hw1 & ->).
      destruct (shape_window _ _ s a r st1 w1 (reserveScope_shape rsv toks) H1 Hw1) as (st0 & w0 & H0 & Hw0 & -> & _).
      exists st0, w0. auto.
    + rewrite O. apply updScope_open.
    + rewrite Ep. apply updScope_epoch.
Qed.

(* ---------- Admit ---------- *)

Lemma scope_fold_obs : forall l s,
  sameObs s (fold_left scope l s) /\ grows s (fold_left scope l s) /\
  forall r, In r l -> exists_scope (fold_left scope l s) r.
Proof.
  induction l as [|a l IH]; simpl; intros s.
  - split; [apply sameObs_refl|split; [apply grows_refl|intros _ []]].
  - destruct (scope_obs s a) as (S1 & G1 & X1). destruct (IH (scope s a)) as (S2 & G2 & X2).
    split; [eapply sameObs_trans; eauto|split; [eapply grows_trans; eauto|]].
    intros r [<-|Hr]; auto. apply G2. auto.
Qed.

Lemma scope_fold_inv : forall cfg l s, Inv cfg s -> Inv cfg (fold_left scope l s).
Proof. intros. apply fold_preserve; auto. intros. apply scope_inv; auto. Qed.

Lemma bounds_nonneg : forall p, 0 <= fst (bounds p) /\ 0 <= snd (bounds p).
Proof.
  intros p. unfold bounds. destruct (withDefaults_nonneg p) as (H1 & H2 & H3 & H4 & H5).
  set (q := withDefaults p) in *. cbn [fst snd]. lia.
Qed.

(* A request admitted under the configuration: distinct scopes (as the kernel
   requires), strict mode, and every scope's budgets those of the configuration. *)
Definition wfReq (cfg : Config) (req : AdmitRequest) : Prop :=
  NoDup (map Ref (Scopes req)) /\ fst (modeOf req) = Strict /\
  forall sc, In sc (Scopes req) ->
    match Lim sc with Some l => Budgets l = cfg (Ref sc) | None => cfg (Ref sc) = [] end.

Lemma scopeLoop_fail_none : forall s1 scs mode short inCost out n s2 n0 fail toks,
  scopeLoop s1 scs 0 mode short inCost out n None = (s2, n0, fail) ->
  checks s2 scs 0 toks fail = None -> fail = None.
Proof.
  intros s1 scs mode short inCost out n s2 n0 fail toks L C.
  destruct (scopeLoop_obs _ _ _ _ _ _ _ _ _ _ _ _ L) as (_ & _ & _ & F & _).
  destruct F as [->|(j & sc & l & Hn & Hl & ->)]; auto.
  pose proof (checks_none _ _ _ _ _ C j sc l Hn Hl) as H. simpl in H. rewrite Nat.eqb_refl in H. discriminate.
Qed.

Lemma memb_map_Ref : forall r scs, memb r (map Ref scs) = true -> exists sc, In sc scs /\ Ref sc = r.
Proof.
  intros r scs H. apply memb_In in H. apply in_map_iff in H as (sc & <- & H). eauto.
Qed.

Theorem admit_inv : forall cfg s now req, Inv cfg s -> wfReq cfg req -> Inv cfg (fst (Admit s now req)).
Proof.
  intros cfg s now req I (Hnd & Hm & Hcfg). unfold Admit.
  destruct (modeOf req) as [mode short] eqn:Em. simpl in Hm. subst mode.
  destruct (bounds (RPrice req)) as [inPrice outPrice] eqn:Eb.
  pose proof (bounds_nonneg (RPrice req)) as Hb. rewrite Eb in Hb. simpl in Hb. destruct Hb as [Hip Hop].
  destruct (isOpen s (ID req)); [simpl; auto|].
  set (refs := map Ref (Scopes req)) in *.
  set (inCost := addMul 0 (Z.max (PromptBytes req) 0) inPrice).
  assert (Hic : 0 <= inCost) by (pose proof (addMul_ge 0 (Z.max (PromptBytes req) 0) inPrice); unfold inCost; lia).
  set (s1 := fold_left scope refs s).
  destruct (scope_fold_obs refs s) as (S1 & G1 & X1). fold s1 in S1, G1, X1.
  pose proof (scope_fold_inv cfg refs s I) as I1. fold s1 in I1.
  destruct (scopeLoop s1 (Scopes req) 0 Strict short inCost outPrice (outBoundOf req) None) as [[s2 n0] fail] eqn:L.
  destruct (scopeLoop_obs _ _ _ _ _ _ _ _ _ _ _ _ L) as (S2 & G2 & T2 & _ & L2).
  assert (I2 : Inv cfg s2).
  { eapply scopeLoop_inv; eauto. intros sc l Hsc Hl b Hb'. specialize (Hcfg sc Hsc). rewrite Hl in Hcfg.
    rewrite <- Hcfg. auto. }
  match goal with |- Inv cfg (fst (match ?c with Some _ => _ | None => _ end)) => destruct c as [[why r]|] eqn:C end;
    [simpl; exact I2|].
  assert (fail = None) by (eapply scopeLoop_fail_none; eauto). subst fail.
  destruct (L2 eq_refl Hic Hop eq_refl) as (_ & _ & Hw).
  set (worst := worstOf inCost n0 outPrice) in *.
  destruct (reserve_fold worst (Z.max (PromptBytes req) 0 + n0) refs s2 Hnd)
    as (U & F & C3 & T & E & EB & W & O & Ep).
  set (s3 := fold_left _ refs s2) in *.
  simpl. constructor; simpl.
  - intros r b Hb'. change (UsageOf (mkState (scopes s3) (open s3 ++ _) (epoch s3)) r (bPeriod b))
      with (UsageOf s3 r (bPeriod b)). rewrite U. simpl.
    pose proof (inv_budget _ _ I2 r b Hb').
    destruct (memb r refs && trackedb s2 r (bPeriod b)) eqn:M; [|lia].
    apply andb_true_iff in M as [M _]. destruct (memb_map_Ref _ _ M) as (sc & Hsc & <-).
    pose proof (Hcfg sc Hsc) as Hc. destruct (Lim sc) as [l|] eqn:Hl; [|rewrite Hc in Hb'; contradiction].
    specialize (Hw sc l b Hsc Hl ltac:(rewrite Hc; auto)).
    rewrite <- (avail_same s1 s2) in Hw by auto. unfold avail in Hw. lia.
  - intros res Hres. apply in_app_or in Hres as [Hres|[<-|[]]]; [|reflexivity].
    rewrite O in Hres. apply (inv_strict _ _ I2); auto.
  - intros res r st w Hres Hr H Hw'. destruct (W r st w H Hw') as (st0 & w0 & H0 & Hw0 & ->).
    apply in_app_or in Hres as [Hres|[<-|[]]].
    + rewrite O in Hres. eapply inv_since_res; eauto.
    + simpl. rewrite Ep. eapply inv_since; eauto.
  - intros res r Hres Hr. apply in_app_or in Hres as [Hres|[<-|[]]].
    + rewrite O in Hres. destruct (inv_tracked _ _ I2 res r Hres Hr) as [Hex Ht].
      split; [apply E; auto|]. intros b Hb'.
      change (trackedb s3 r (bPeriod b) = true). rewrite T. apply Ht. auto.
    + simpl in Hr. split.
      * change (exists_scope s3 r). apply E. apply G2. apply X1. auto.
      * intros b Hb'. change (trackedb s3 r (bPeriod b) = true). rewrite T.
        apply in_map_iff in Hr as (sc & <- & Hsc).
        pose proof (Hcfg sc Hsc) as Hc. destruct (Lim sc) as [l|] eqn:Hl; [|rewrite Hc in Hb'; contradiction].
        apply (T2 sc l Hsc Hl); [apply X1; apply in_map; auto|]. rewrite Hc. auto.
  - intros r st w H Hw'. destruct (W r st w H Hw') as (st0 & w0 & H0 & Hw0 & ->).
    rewrite Ep. eapply inv_since; eauto.
Qed.

Lemma InFlight_counters : forall s r, InFlight s r = fst (fst (counters s r)).
Proof. intros. unfold InFlight, counters, lookup. destruct (scopes s r); reflexivity. Qed.

(* All or nothing: an admission either reserves on every scope of the
   request (one in-flight request, and DReserved in every tracked window of
   each scope) or changes no counter anywhere. Creating a scope or window with
   zero counters is not a change: every observation of it reads as before. *)
Theorem admit_all_or_nothing : forall s now req s' d,
  Admit s now req = (s', d) ->
  (Admitted d = false -> sameObs s s') /\
  (Admitted d = true -> NoDup (map Ref (Scopes req)) ->
    open s' = open s ++ [last (open s') (mkReservation 0 [] (RPrice req) 0 0 0 0 0)] /\
    forall r,
      (In r (map Ref (Scopes req)) ->
         InFlight s' r = InFlight s r + 1 /\
         forall p, trackedb s' r p = true ->
           UsageOf s' r p = (fst (UsageOf s r p), snd (UsageOf s r p) + DReserved d)) /\
      (~ In r (map Ref (Scopes req)) ->
         (forall p, UsageOf s' r p = UsageOf s r p) /\ counters s' r = counters s r)).
Proof.
  intros s now req s' d H. unfold Admit in H.
  destruct (modeOf req) as [mode short] eqn:Em.
  destruct (bounds (RPrice req)) as [inPrice outPrice] eqn:Eb.
  destruct (isOpen s (ID req)).
  { inversion H; subst. split; [intros; apply sameObs_refl|intros Hc; discriminate]. }
  set (refs := map Ref (Scopes req)) in *.
  set (inCost := addMul 0 (Z.max (PromptBytes req) 0) inPrice) in *.
  set (s1 := fold_left scope refs s) in *.
  destruct (scope_fold_obs refs s) as (S1 & G1 & X1). fold s1 in S1, G1, X1.
  destruct (scopeLoop s1 (Scopes req) 0 mode short inCost outPrice (outBoundOf req) None) as [[s2 n0] fail] eqn:L.
  destruct (scopeLoop_obs _ _ _ _ _ _ _ _ _ _ _ _ L) as (S2 & G2 & _ & _ & _).
  match type of H with (match ?c with Some _ => _ | None => _ end) = _ => destruct c as [[why r]|] eqn:C end.
  { inversion H; subst. split; [intros _; eapply sameObs_trans; eauto|intros Hc; discriminate]. }
  set (toks := match mode with Estimate => _ | Strict => _ end) in *.
  set (rsv := match mode with
              | Strict => worstOf inCost (match fail with Some _ => outBoundOf req | None => n0 end) outPrice
              | Estimate => 0 end) in *.
  inversion H; subst. clear H. split; [intros Hc; discriminate|]. intros _ Hnd.
  destruct (reserve_fold rsv toks refs s2 Hnd) as (U & F & C3 & T & E & EB & W & O & Ep).
  simpl. split; [rewrite O, last_last; destruct S2 as (_ & _ & ->); destruct S1 as (_ & _ & ->); reflexivity|].
  intros r. split.
  - intros Hr. split.
    + change (InFlight (fold_left (fun s r => updScope s r (reserveScope rsv toks)) refs s2) r = InFlight s r + 1).
      rewrite F. apply memb_In in Hr as Hm. rewrite Hm.
      assert (Hx : existsb_scope s2 r = true).
      { pose proof (proj1 G2 r (X1 r (proj1 (memb_In _ _) Hm))) as Hex. unfold exists_scope, existsb_scope in *.
        destruct (scopes s2 r); congruence. }
      rewrite Hx. simpl. rewrite !InFlight_counters.
      destruct S2 as (_ & C2 & _). destruct S1 as (_ & Cs1 & _). rewrite C2, Cs1. reflexivity.
    + intros p Ht. change (UsageOf (fold_left (fun s r => updScope s r (reserveScope rsv toks)) refs s2) r p
        = (fst (UsageOf s r p), snd (UsageOf s r p) + rsv)).
      change (trackedb (fold_left (fun s r => updScope s r (reserveScope rsv toks)) refs s2) r p = true) in Ht.
      rewrite T in Ht. rewrite U, Ht. apply memb_In in Hr. rewrite Hr. simpl.
      destruct S2 as (U2 & _ & _). destruct S1 as (U1 & _ & _). rewrite U2, U1. reflexivity.
  - intros Hr. assert (Hm : memb r refs = false) by (destruct (memb r refs) eqn:M; auto; apply memb_In in M; contradiction).
    split.
    + intros p. change (UsageOf (fold_left (fun s r => updScope s r (reserveScope rsv toks)) refs s2) r p
        = UsageOf s r p). rewrite U, Hm. simpl.
      destruct S2 as (U2 & _ & _). destruct S1 as (U1 & _ & _). rewrite U2, U1.
      destruct (UsageOf s r p); simpl; f_equal; lia.
    + change (counters (fold_left (fun s r => updScope s r (reserveScope rsv toks)) refs s2) r = counters s r).
      rewrite C3 by auto. destruct S2 as (_ & C2 & _). destruct S1 as (_ & Cs1 & _). rewrite C2, Cs1. reflexivity.
Qed.

(* ---------- forgetting an idle scope (run scopes' TTL) ---------- *)

(* Forgetting a scope that no open reservation names keeps the invariant:
   the forgotten scope's windows read as zero, below every (non-negative)
   limit, and every reservation's scopes are untouched. A run that comes
   back starts from the ledger's figure (the accountants seed it), which
   the ledger theorems (Ledger.v) cover. *)
Theorem forget_inv : forall cfg s r, cfgOK cfg -> Inv cfg s -> Inv cfg (Forget s r).
Proof.
  intros cfg s r Hcfg I. unfold Forget.
  destruct (existsb (fun res => existsb (Nat.eqb r) (rScopes res)) (open s)) eqn:E; [exact I|].
  assert (Hn : forall res r', In res (open s) -> In r' (rScopes res) -> r' <> r).
  { intros res r' Hres Hr' ->.
    assert (C : existsb (fun res => existsb (Nat.eqb r) (rScopes res)) (open s) = true).
    { apply existsb_exists. exists res. split; auto.
      apply existsb_exists. exists r. split; auto. apply Nat.eqb_refl. }
    congruence. }
  destruct I as [Ib Is Isr It Isn]. constructor; simpl.
  - intros r' b Hb. unfold UsageOf. simpl. destruct (Nat.eqb_spec r' r).
    + simpl. apply Hcfg in Hb. lia.
    + apply (Ib r' b Hb).
  - exact Is.
  - intros res r' st w Hres Hr' Hst Hw. destruct (Nat.eqb_spec r' r); [discriminate|].
    eapply Isr; eauto.
  - intros res r' Hres Hr'. pose proof (Hn res r' Hres Hr') as Hne.
    destruct (It res r' Hres Hr') as [Ex Tr]. unfold exists_scope, trackedb in *. simpl.
    apply Nat.eqb_neq in Hne. rewrite Hne. split; auto.
  - intros r' st w Hst Hw. destruct (Nat.eqb r' r); [discriminate|]. eapply Isn; eauto.
Qed.

(* ---------- no overspend ---------- *)

(* One operation on the state, under a fixed configuration: an admission of
   a well-formed strict request, a settlement whose usage costs no more than
   the reservation holds (Cost_le_WorstCost: true whenever the usage is
   within the bounds the request was admitted for), or an expiry. *)
Inductive step (cfg : Config) : State -> State -> Prop :=
| StepAdmit : forall s now req, wfReq cfg req -> step cfg s (fst (Admit s now req))
| StepSettle : forall s id u st,
    (forall res, findRes (open s) id = Some res -> Cost (rPrice res) u <= rReserved res) ->
    step cfg s (fst (Settle s id u st))
| StepExpire : forall s now, step cfg s (fst (Expire s now))
| StepForget : forall s r, cfgOK cfg -> step cfg s (Forget s r).

Inductive steps (cfg : Config) : State -> State -> Prop :=
| StepsNil : forall s, steps cfg s s
| StepsCons : forall s s' s'', step cfg s s' -> steps cfg s' s'' -> steps cfg s s''.

Theorem step_inv : forall cfg s s', Inv cfg s -> step cfg s s' -> Inv cfg s'.
Proof.
  intros cfg s s' I H. destruct H.
  - apply admit_inv; auto.
  - apply settle_inv; auto.
  - apply expire_inv; auto.
  - apply forget_inv; auto.
Qed.

Theorem steps_inv : forall cfg s s', Inv cfg s -> steps cfg s s' -> Inv cfg s'.
Proof. intros cfg s s' I H. induction H; auto. apply IHsteps. eapply step_inv; eauto. Qed.

(* State.Expire as Go runs it — its lease loop, then the forgetting of
   every idle scope with a TTL (run counters' TTL expiry) — is a sequence of
   steps of the model, whatever scopes the TTL clock finds idle: so
   no_overspend covers it, and it keeps the invariant (expireTTL_inv). *)
Lemma forget_fold_steps : forall cfg l s, cfgOK cfg -> steps cfg s (fold_left Forget l s).
Proof.
  intros cfg l. induction l as [|r l IH]; simpl; intros s Hcfg.
  - apply StepsNil.
  - eapply StepsCons; [apply StepForget; exact Hcfg|]. apply IH. exact Hcfg.
Qed.

Theorem expireTTL_steps : forall cfg s now idle, cfgOK cfg -> steps cfg s (fst (ExpireTTL s now idle)).
Proof.
  intros cfg s now idle Hcfg. unfold ExpireTTL.
  destruct (Expire s now) as [s' out] eqn:E. simpl.
  eapply StepsCons; [apply (StepExpire cfg s now)|]. rewrite E. simpl.
  apply forget_fold_steps. exact Hcfg.
Qed.

Corollary expireTTL_inv : forall cfg s now idle, cfgOK cfg -> Inv cfg s -> Inv cfg (fst (ExpireTTL s now idle)).
Proof. intros. eapply steps_inv; [eassumption|]. apply expireTTL_steps. assumption. Qed.

(* No overspend: in strict mode, spent + reserved ≤ limit holds in every
   budget window of every scope after any sequence of admissions,
   settlements and expiries from a state where the invariant held — in
   particular from NewState. *)
Theorem no_overspend : forall cfg s s', Inv cfg s -> steps cfg s s' ->
  forall r b, In b (cfg r) ->
    fst (UsageOf s' r (bPeriod b)) + snd (UsageOf s' r (bPeriod b)) <= bLimit b.
Proof. intros cfg s s' I H. apply (inv_budget _ _ (steps_inv cfg s s' I H)). Qed.

Corollary no_overspend_from_start : forall cfg s', cfgOK cfg -> steps cfg NewState s' ->
  forall r b, In b (cfg r) ->
    fst (UsageOf s' r (bPeriod b)) + snd (UsageOf s' r (bPeriod b)) <= bLimit b.
Proof. intros. eapply no_overspend; eauto. apply inv_new; auto. Qed.

(* ---------- open ids are unique (so expire_then_settle applies) ---------- *)

Lemma map_filter_nodup : forall (f : reservation -> bool) l,
  NoDup (map rID l) -> NoDup (map rID (filter f l)).
Proof.
  intros f l. induction l as [|a l IH]; simpl; intros H; auto.
  inversion H as [|? ? Hn Hl]; subst. destruct (f a); simpl; auto.
  constructor; auto. intros Hin. apply Hn. apply in_map_iff in Hin as (x & Hx & Hin).
  apply filter_In in Hin as [Hin _]. rewrite <- Hx. apply in_map. auto.
Qed.

Lemma isOpen_false : forall s id, isOpen s id = false -> ~ In id (map rID (open s)).
Proof.
  intros s id H Hin. unfold isOpen in H. apply in_map_iff in Hin as (x & Hx & Hin).
  assert (existsb (fun r => Nat.eqb (rID r) id) (open s) = true)
    by (apply existsb_exists; exists x; split; auto; apply Nat.eqb_eq; auto). congruence.
Qed.

Lemma NoDup_snoc : forall {A} (l : list A) x, NoDup l -> ~ In x l -> NoDup (l ++ [x]).
Proof.
  intros A l x. induction l as [|a l IH]; simpl; intros H Hx.
  - constructor; [intros []|constructor].
  - inversion H; subst. constructor; [|apply IH; auto].
    intros Hin. apply in_app_or in Hin as [Hin|[<-|[]]]; auto.
Qed.

Theorem ids_unique_admit : forall s now req,
  NoDup (map rID (open s)) -> NoDup (map rID (open (fst (Admit s now req)))).
Proof.
  intros s now req H.
  destruct (Admit s now req) as [s' d] eqn:A. simpl.
  pose proof A as A'. unfold Admit in A'.
  destruct (modeOf req) as [mode short]. destruct (bounds (RPrice req)) as [inPrice outPrice].
  destruct (isOpen s (ID req)) eqn:Eo; [inversion A'; subst; auto|].
  destruct (scope_fold_obs (map Ref (Scopes req)) s) as ((_ & _ & O1) & _ & _).
  set (s1 := fold_left scope (map Ref (Scopes req)) s) in *.
  set (inCost := addMul 0 (Z.max (PromptBytes req) 0) inPrice) in *.
  destruct (scopeLoop s1 (Scopes req) 0 mode short inCost outPrice (outBoundOf req) None) as [[s2 n0] fail] eqn:L.
  destruct (scopeLoop_obs _ _ _ _ _ _ _ _ _ _ _ _ L) as ((_ & _ & O2) & _).
  match type of A' with (match ?c with Some _ => _ | None => _ end) = _ => destruct c as [[why r]|] end.
  - inversion A'; subst. rewrite O2, O1. auto.
  - inversion A'; subst. simpl.
    match goal with |- NoDup (map rID (open (fold_left ?F ?l ?x) ++ _)) =>
      assert (Ho : open (fold_left F l x) = open x)
        by (apply (fold_preserve (fun y => open y = open x)); auto; intros; rewrite updScope_open; auto) end.
    rewrite Ho, O2, O1, map_app. simpl.
    apply NoDup_snoc; auto. apply isOpen_false; auto.
Qed.

Theorem ids_unique_close : forall s res cost fx actual,
  NoDup (map rID (open s)) -> NoDup (map rID (open (close s res cost fx actual))).
Proof. intros. rewrite close_open. apply map_filter_nodup. auto. Qed.

Theorem ids_unique_settle : forall s id u st,
  NoDup (map rID (open s)) -> NoDup (map rID (open (fst (Settle s id u st)))).
Proof.
  intros. unfold Settle. destruct (findRes (open s) id); simpl; auto. apply ids_unique_close. auto.
Qed.

Theorem ids_unique_expire : forall s now,
  NoDup (map rID (open s)) -> NoDup (map rID (open (fst (Expire s now)))).
Proof.
  intros s now. unfold Expire. generalize (length (open s)) as fuel. intros fuel. revert s.
  induction fuel as [|fuel IH]; simpl; intros s H; auto.
  destruct (firstDue (open s) now) as [res|]; simpl; auto.
  destruct (expireLoop fuel (close s res (rWorst res) false 0) now) as [s'' out] eqn:E2. simpl.
  replace s'' with (fst (expireLoop fuel (close s res (rWorst res) false 0) now)) by (rewrite E2; auto).
  apply IH. apply ids_unique_close. auto.
Qed.
