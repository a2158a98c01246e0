(* Cost.v — theorems about the cost rule and the clamp (kernel/cost.go,
   affordable in kernel/state.go). *)

Require Import ZArith Lia Bool.
Require Import Tollgate.Kernel.
Open Scope Z_scope.

Lemma ceil_spec : forall a m, ceilPerMillion a <= m <-> a <= m * tokensPerPrice.
Proof.
  intros a m. unfold ceilPerMillion, tokensPerPrice.
  pose proof (Z.div_mod a 1000000 ltac:(lia)).
  pose proof (Z.mod_pos_bound a 1000000 ltac:(lia)).
  destruct (Z.eqb_spec (a mod 1000000) 0); lia.
Qed.

Lemma ceil_mono : forall a b, a <= b -> ceilPerMillion a <= ceilPerMillion b.
Proof.
  intros a b H. apply ceil_spec.
  unfold ceilPerMillion, tokensPerPrice.
  pose proof (Z.div_mod b 1000000 ltac:(lia)).
  pose proof (Z.mod_pos_bound b 1000000 ltac:(lia)).
  destruct (Z.eqb_spec (b mod 1000000) 0); lia.
Qed.

Lemma ceil_nonneg : forall a, 0 <= a -> 0 <= ceilPerMillion a.
Proof.
  intros a H. unfold ceilPerMillion, tokensPerPrice.
  pose proof (Z.div_pos a 1000000 H ltac:(lia)).
  destruct (_ =? 0); lia.
Qed.

Lemma addMul_eq : forall acc n p, addMul acc n p = acc + Z.max n 0 * Z.max p 0.
Proof.
  intros. unfold addMul.
  destruct (Z.leb_spec n 0), (Z.leb_spec p 0); simpl; nia.
Qed.

Lemma addMul_ge : forall acc n p, acc <= addMul acc n p.
Proof. intros. rewrite addMul_eq. nia. Qed.

Lemma worstOf_mono : forall inCost out m m',
  m <= m' -> worstOf inCost m out <= worstOf inCost m' out.
Proof.
  intros. unfold worstOf. apply ceil_mono. rewrite !addMul_eq. nia.
Qed.

Lemma worstOf_nonneg : forall inCost m out, 0 <= inCost -> 0 <= worstOf inCost m out.
Proof. intros. unfold worstOf. apply ceil_nonneg. pose proof (addMul_ge inCost m out). lia. Qed.

Lemma fit_q : forall room inCost out f, 0 < out -> 0 <= f -> f <= (room - inCost) / out ->
  inCost + Z.max f 0 * Z.max out 0 <= room.
Proof.
  intros. rewrite !Z.max_l by lia.
  pose proof (Z.mul_div_le (room - inCost) out H).
  pose proof (Z.mul_le_mono_nonneg_r f ((room - inCost) / out) out ltac:(lia) H1). lia.
Qed.

(* Clamp is safe: a non-negative result of affordable never exceeds the
   requested bound and its worst cost fits in what the budget has left. *)
Theorem affordable_safe : forall avail inCost out n,
  0 <= inCost -> 0 <= out ->
  0 <= affordable avail inCost out n ->
  affordable avail inCost out n <= n /\
  worstOf inCost (affordable avail inCost out n) out <= avail.
Proof.
  intros avail inCost out n Hin Hout. unfold affordable, worstOf.
  destruct (Z.ltb_spec avail 0); [lia|].
  assert (Hroom : millionths avail = avail * tokensPerPrice)
    by (unfold millionths; destruct (Z.leb_spec avail 0); [assert (avail = 0) by lia; subst|]; reflexivity).
  rewrite Hroom. rewrite ceil_spec, addMul_eq.
  destruct (Z.ltb_spec (avail * tokensPerPrice) inCost); [lia|].
  destruct (Z.leb_spec out 0).
  - intros. split; [lia|]. assert (out = 0) by lia. subst out. rewrite (Z.max_r 0 0) by lia. lia.
  - destruct (Z.geb_spec ((avail * tokensPerPrice - inCost) / out) n); intros; split; try lia;
      apply fit_q; lia.
Qed.

(* Clamp is maximal: every bound m ≤ n whose worst cost fits is at most what
   affordable returns (so affordable is the largest that fits). *)
Theorem affordable_maximal : forall avail inCost out n m,
  0 <= inCost -> 0 <= out -> 0 <= m <= n ->
  worstOf inCost m out <= avail ->
  m <= affordable avail inCost out n.
Proof.
  intros avail inCost out n m Hin Hout Hm Hfit.
  unfold worstOf in Hfit. apply ceil_spec in Hfit. rewrite addMul_eq in Hfit.
  unfold affordable, millionths.
  destruct (Z.ltb_spec avail 0).
  { exfalso. unfold tokensPerPrice in *. nia. }
  destruct (Z.leb_spec avail 0).
  - destruct (Z.ltb_spec 0 inCost).
    { exfalso. unfold tokensPerPrice in *. nia. }
    destruct (Z.leb_spec out 0); [lia|].
    assert (m * out <= 0) by (unfold tokensPerPrice in *; nia).
    assert (m = 0) by nia. subst.
    destruct (Z.geb_spec ((0 - inCost) / out) n); [lia|].
    apply Z.div_le_lower_bound; lia.
  - destruct (Z.ltb_spec (avail * tokensPerPrice) inCost).
    { exfalso. nia. }
    destruct (Z.leb_spec out 0); [lia|].
    destruct (Z.geb_spec ((avail * tokensPerPrice - inCost) / out) n); [lia|].
    apply Z.div_le_lower_bound; [lia|].
    rewrite !Z.max_l in Hfit by lia. nia.
Qed.

(* The worst cost Admit reserves is WorstCost of the request's bounds. *)
Lemma worstOf_WorstCost : forall p inBound n,
  worstOf (addMul 0 inBound (fst (bounds p))) n (snd (bounds p)) = WorstCost p inBound n.
Proof. intros. unfold WorstCost, worstOf. destruct (bounds p). reflexivity. Qed.

Lemma withDefaults_nonneg : forall p,
  0 <= pInput (withDefaults p) /\ 0 <= pCachedInput (withDefaults p) /\
  0 <= pCacheWrite (withDefaults p) /\ 0 <= pOutput (withDefaults p) /\
  0 <= pReasoning (withDefaults p).
Proof.
  intros [i c w o r]. unfold withDefaults; simpl.
  repeat match goal with |- context [if ?b then _ else _] => destruct b eqn:? end;
  rewrite ?Z.leb_le, ?Z.leb_gt in *; lia.
Qed.

Lemma sum5_le : forall a b c d e pI pC pW pO pR I O X Y,
  0 <= a -> 0 <= b -> 0 <= c -> 0 <= d -> 0 <= e -> 0 <= I -> 0 <= O ->
  pI <= I -> pC <= I -> pW <= I -> pO <= O -> pR <= O -> a + b + c <= X -> d + e <= Y ->
  a * pI + b * pC + c * pW + d * pO + e * pR <= X * I + Y * O.
Proof.
  intros.
  pose proof (Z.mul_le_mono_nonneg_l pI I a H H6).
  pose proof (Z.mul_le_mono_nonneg_l pC I b H0 H7).
  pose proof (Z.mul_le_mono_nonneg_l pW I c H1 H8).
  pose proof (Z.mul_le_mono_nonneg_l pO O d H2 H9).
  pose proof (Z.mul_le_mono_nonneg_l pR O e H3 H10).
  pose proof (Z.mul_le_mono_nonneg_r (a + b + c) X I ltac:(lia) H11).
  pose proof (Z.mul_le_mono_nonneg_r (d + e) Y O ltac:(lia) H12).
  lia.
Qed.

(* A usage within the bounds admission reserved for (input tokens of every
   kind ≤ prompt bytes, output and reasoning tokens ≤ the output bound) never
   costs more than its worst cost: Settle's charge fits in the reservation. *)
Theorem Cost_le_WorstCost : forall p u promptBytes outTokens,
  Z.max (uInput u) 0 + Z.max (uCachedInput u) 0 + Z.max (uCacheWrite u) 0 <= promptBytes ->
  Z.max (uOutput u) 0 + Z.max (uReasoning u) 0 <= outTokens ->
  Cost p u <= WorstCost p promptBytes outTokens.
Proof.
  intros p u pb ot Hin Hout.
  unfold Cost, WorstCost, bounds.
  destruct (withDefaults_nonneg p) as (H1 & H2 & H3 & H4 & H5).
  set (q := withDefaults p) in *.
  apply ceil_mono. rewrite !addMul_eq.
  set (I := Z.max (Z.max (pInput q) (pCachedInput q)) (pCacheWrite q)).
  set (O := Z.max (pOutput q) (pReasoning q)).
  assert (pInput q <= I /\ pCachedInput q <= I /\ pCacheWrite q <= I /\ 0 <= I) as (A1 & A2 & A3 & A4)
    by (unfold I; lia).
  assert (pOutput q <= O /\ pReasoning q <= O /\ 0 <= O) as (B1 & B2 & B3) by (unfold O; lia).
  rewrite (Z.max_l (pInput q)), (Z.max_l (pCachedInput q)), (Z.max_l (pCacheWrite q)),
    (Z.max_l (pOutput q)), (Z.max_l (pReasoning q)), (Z.max_l I), (Z.max_l O) by assumption.
  rewrite !Z.add_0_l.
  apply sum5_le; try apply Z.le_max_r; try assumption.
  - eapply Z.le_trans; [exact Hin|apply Z.le_max_l].
  - eapply Z.le_trans; [exact Hout|apply Z.le_max_l].
Qed.
