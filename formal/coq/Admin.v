(* Admin.v — the admin API's authorization rules (admin/auth.go, the key
   handlers of admin/keys.go and withinLimits in admin/convert.go):
   a principal without the admin role never sets a key's limits above its
   own team's, and never changes the limits of a team, user, org, customer
   or the global scope at all.

   Abstractions: ids (team ids) are nat with 0 for the empty string ""; a
   method is one constructor per gRPC method that writes limits; the limits
   the admin API compares are rpm, tpm, max_parallel, the budgets' limits,
   the models (nat ids) and expires_at (Z, 0 for unset). *)

Require Import ZArith List Lia Bool.
Import ListNotations.
Open Scope Z_scope.

(* store.Role *)
Inductive Role := RoleAdmin | RoleTeamAdmin | RoleViewer | RoleUnknown.

(* principal *)
Record principal := mkPrincipal { PID : nat; PRole : Role; PTeamID : nat }.

(* roleSet and its bits *)
Definition roleAdmin : Z := 1.
Definition roleTeamAdmin : Z := 2.
Definition roleViewer : Z := 4.
Definition adminOnly : Z := roleAdmin.
Definition teamWrite : Z := Z.lor roleAdmin roleTeamAdmin.

(* roleBit *)
Definition roleBit (r : Role) : Z :=
  match r with
  | RoleAdmin => roleAdmin
  | RoleTeamAdmin => roleTeamAdmin
  | RoleViewer => roleViewer
  | RoleUnknown => 0
  end.

(* The methods that write limits. *)
Inductive Method :=
  | CreateKey | UpdateKey
  | CreateUser | UpdateUser | CreateTeam | UpdateTeam
  | CreateOrg | UpdateOrg | CreateCustomer | UpdateCustomer
  | Apply.

(* methodRoles, for these methods *)
Definition methodRoles (m : Method) : Z :=
  match m with
  | CreateKey | UpdateKey => teamWrite
  | _ => adminOnly
  end.

(* authenticate's role check: methodRoles[method] & roleBit(p.Role) != 0 *)
Definition authorized (p : principal) (m : Method) : bool :=
  negb (Z.eqb (Z.land (methodRoles m) (roleBit (PRole p))) 0).

(* teamGuard: the team a team-admin caller is limited to, or "" (0). *)
Definition teamGuard (p : principal) : nat :=
  match PRole p with RoleTeamAdmin => PTeamID p | _ => 0%nat end.

(* denyOtherTeam: true when the caller may act on team. *)
Definition denyOtherTeam (p : principal) (team : nat) : bool :=
  let g := teamGuard p in negb (negb (Nat.eqb g 0) && negb (Nat.eqb g team)).

Record Limits := mkLimits {
  RPM : Z; TPM : Z; MaxParallel : Z; Budgets : list Z; Models : list nat; ExpiresAt : Z }.

(* withinLimits' over: a non-zero ceiling c is exceeded by v = 0 (unlimited) or v > c. *)
Definition over (v c : Z) : bool := (0 <? c) && ((v =? 0) || (c <? v)).

Definition lowest (c0 : Z) (cs : list Z) : Z := fold_left Z.min cs c0.

(* withinLimits: true when l does not exceed the ceiling (nil error). *)
Definition withinLimits (l ceiling : Limits) : bool :=
  negb (over (RPM l) (RPM ceiling)) &&
  negb (over (TPM l) (TPM ceiling)) &&
  negb (over (MaxParallel l) (MaxParallel ceiling)) &&
  match Budgets ceiling with
  | [] => true
  | c0 :: cs => match Budgets l with
                | [] => false
                | bs => forallb (fun b => b <=? lowest c0 cs) bs
                end
  end &&
  match Models ceiling with
  | [] => true
  | cms => match Models l with
           | [] => false
           | ms => forallb (fun m => existsb (Nat.eqb m) cms) ms
           end
  end &&
  negb (negb (ExpiresAt ceiling =? 0) && ((ExpiresAt l =? 0) || (ExpiresAt ceiling <? ExpiresAt l))).

(* checkTeamCeiling, with teamLimits the limits stored for each team. *)
Definition checkTeamCeiling (teamLimits : nat -> Limits) (p : principal) (team : nat) (l : Limits) : bool :=
  if Nat.eqb (teamGuard p) 0 then true else withinLimits l (teamLimits team).

(* UpdateKey of a key of team keyTeam to limits l: the interceptor's role
   check, then denyOtherTeam and checkTeamCeiling in the update. *)
Definition updateKeyAllowed (teamLimits : nat -> Limits) (p : principal) (keyTeam : nat) (l : Limits) : bool :=
  authorized p UpdateKey && denyOtherTeam p keyTeam && checkTeamCeiling teamLimits p keyTeam l.

(* createKey: the team defaults to the caller's own for a team admin. *)
Definition createKeyTeam (p : principal) (reqTeam : nat) : nat :=
  let g := teamGuard p in if negb (Nat.eqb g 0) && Nat.eqb reqTeam 0 then g else reqTeam.

Definition createKeyAllowed (teamLimits : nat -> Limits) (p : principal) (reqTeam : nat) (l : Limits) : bool :=
  let team := createKeyTeam p reqTeam in
  authorized p CreateKey && denyOtherTeam p team && checkTeamCeiling teamLimits p team l.

(* ---------- theorems ---------- *)

(* l is at most the ceiling c in every limit the team has. *)
Definition belowCeiling (l c : Limits) : Prop :=
  (0 < RPM c -> 0 < RPM l <= RPM c) /\
  (0 < TPM c -> 0 < TPM l <= TPM c) /\
  (0 < MaxParallel c -> 0 < MaxParallel l <= MaxParallel c) /\
  (Budgets c <> [] -> Budgets l <> [] /\ forall b cb, In b (Budgets l) -> In cb (Budgets c) -> b <= cb) /\
  (Models c <> [] -> Models l <> [] /\ forall m, In m (Models l) -> In m (Models c)) /\
  (ExpiresAt c <> 0 -> ExpiresAt l <> 0 /\ ExpiresAt l <= ExpiresAt c).

Lemma lowest_le : forall cs c0 x, In x (c0 :: cs) -> lowest c0 cs <= x.
Proof.
  unfold lowest. induction cs as [|c cs IH]; simpl; intros c0 x H.
  - destruct H as [<-|[]]. lia.
  - assert (Hm : fold_left Z.min cs (Z.min c0 c) <= Z.min c0 c) by
      (clear; revert c0 c; induction cs; simpl; intros; [lia|]; specialize (IHcs (Z.min c0 c) a); lia).
    destruct H as [<-|[<-|H]]; [lia|lia|]. apply (IH (Z.min c0 c)). right. auto.
Qed.

Lemma over_false : forall v c, 0 <= v -> over v c = false -> 0 < c -> 0 < v <= c.
Proof.
  unfold over. intros v c Hv H Hc. destruct (Z.ltb_spec 0 c); [|lia].
  destruct (Z.eqb_spec v 0); simpl in H; [discriminate|].
  destruct (Z.ltb_spec c v); [discriminate|]. lia.
Qed.

(* The request validator (proto/tollgate/admin/v1/validate.go) rejects
   negative rpm, tpm and max_parallel before any handler runs. *)
Definition nonneg (l : Limits) : Prop := 0 <= RPM l /\ 0 <= TPM l /\ 0 <= MaxParallel l.

Theorem withinLimits_below : forall l c, nonneg l -> withinLimits l c = true -> belowCeiling l c.
Proof.
  intros l c (N1 & N2 & N3) H. unfold withinLimits in H.
  repeat rewrite andb_true_iff in H. destruct H as (((((H1 & H2) & H3) & H4) & H5) & H6).
  apply negb_true_iff in H1, H2, H3, H6.
  split; [intros; apply over_false; auto|].
  split; [intros; apply over_false; auto|].
  split; [intros; apply over_false; auto|].
  split; [|split].
  - intros Hc. destruct (Budgets c) as [|c0 cs] eqn:Ec; [contradiction|].
    destruct (Budgets l) as [|b0 bs] eqn:El; [discriminate|].
    split; [discriminate|]. intros b cb Hb Hcb.
    rewrite forallb_forall in H4. specialize (H4 b Hb). apply Z.leb_le in H4.
    pose proof (lowest_le cs c0 cb Hcb). lia.
  - intros Hc. destruct (Models c) as [|m0 ms] eqn:Ec; [contradiction|].
    destruct (Models l) as [|x xs] eqn:El; [discriminate|].
    split; [discriminate|]. intros m Hm.
    rewrite forallb_forall in H5. specialize (H5 m Hm).
    apply existsb_exists in H5 as (y & Hy & E). apply Nat.eqb_eq in E. subst. auto.
  - intros Hc. destruct (Z.eqb_spec (ExpiresAt c) 0); [contradiction|]. simpl in H6.
    apply orb_false_iff in H6 as [H6 H7]. apply Z.eqb_neq in H6. apply Z.ltb_ge in H7. auto.
Qed.

(* Only an admin or a team admin may write a key's limits; only an admin may
   write the limits of a user, team, org, customer or (Apply) the global scope. *)
Theorem only_admin_writes_scopes : forall p m,
  m <> CreateKey -> m <> UpdateKey -> authorized p m = true -> PRole p = RoleAdmin.
Proof.
  intros p m H1 H2 H. unfold authorized, methodRoles in H.
  destruct m; try contradiction; destruct (PRole p); auto; discriminate.
Qed.

Lemma keys_need_role : forall p m, authorized p m = true -> PRole p = RoleAdmin \/ PRole p = RoleTeamAdmin.
Proof. intros p m H. unfold authorized, methodRoles in H. destruct m, (PRole p); auto; discriminate. Qed.

(* Permissions: a principal without the admin role that may update a key
   acts on a key of its own team, and the key's new limits are at most its
   team's in every limit the team has — given that the team admin's
   credential names a team (see team_admin_without_team). *)
Theorem updateKey_within_team : forall teamLimits p keyTeam l,
  PRole p <> RoleAdmin -> PTeamID p <> 0%nat -> nonneg l ->
  updateKeyAllowed teamLimits p keyTeam l = true ->
  keyTeam = PTeamID p /\ belowCeiling l (teamLimits (PTeamID p)).
Proof.
  intros teamLimits p keyTeam l Hr Ht Hn H. unfold updateKeyAllowed in H.
  apply andb_true_iff in H as [H Hc]. apply andb_true_iff in H as [Ha Hd].
  destruct (keys_need_role p UpdateKey Ha) as [|Hta]; [contradiction|].
  unfold denyOtherTeam, teamGuard in Hd. rewrite Hta in Hd.
  apply Nat.eqb_neq in Ht. rewrite Ht in Hd. simpl in Hd.
  destruct (Nat.eqb_spec (PTeamID p) keyTeam); [|discriminate]. subst.
  split; auto. unfold checkTeamCeiling, teamGuard in Hc. rewrite Hta, Ht in Hc.
  apply withinLimits_below; auto.
Qed.

Theorem createKey_within_team : forall teamLimits p reqTeam l,
  PRole p <> RoleAdmin -> PTeamID p <> 0%nat -> nonneg l ->
  createKeyAllowed teamLimits p reqTeam l = true ->
  createKeyTeam p reqTeam = PTeamID p /\ belowCeiling l (teamLimits (PTeamID p)).
Proof.
  intros teamLimits p reqTeam l Hr Ht Hn H. unfold createKeyAllowed in H.
  apply andb_true_iff in H as [H Hc]. apply andb_true_iff in H as [Ha Hd].
  destruct (keys_need_role p CreateKey Ha) as [|Hta]; [contradiction|].
  set (team := createKeyTeam p reqTeam) in *.
  unfold denyOtherTeam, teamGuard in Hd. rewrite Hta in Hd.
  apply Nat.eqb_neq in Ht. rewrite Ht in Hd. simpl in Hd.
  destruct (Nat.eqb_spec (PTeamID p) team); [|discriminate]. rewrite <- e in *.
  split; auto. unfold checkTeamCeiling, teamGuard in Hc. rewrite Hta, Ht in Hc.
  apply withinLimits_below; auto.
Qed.

(* The hypothesis PTeamID p <> "" is needed: CreateAdminCredential accepts a
   team-admin credential without a team, and teamGuard then returns "", which
   limits nothing — such a credential may give any key unlimited limits. *)
Theorem team_admin_without_team : forall teamLimits keyTeam l,
  updateKeyAllowed teamLimits (mkPrincipal 1 RoleTeamAdmin 0) keyTeam l = true.
Proof. intros. reflexivity. Qed.
