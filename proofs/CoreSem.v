(** * Core-TeIL (spec/core.md): the desugaring preserves meaning, element by element. *)

From Coq Require Import String List Arith Lia Bool.
From TeIL Require Import Lists Syntax Semantics Core.
Import ListNotations.

Lemma front2 t l h :
  1 <= l -> l < h -> h <= length t ->
  mv 0 l (mv 0 (h - 1) t) = nth (l - 1) t 0 :: nth (h - 1) t 0 :: del (l - 1) (del (h - 1) t).
Proof.
  intros Hl Hlh Hh. unfold mv. simpl. destruct l as [|l]; [lia|]. simpl.
  rewrite Nat.sub_0_r, nth_del_lt by lia. reflexivity.
Qed.

Lemma front2_index l h a r :
  1 <= l -> unmv 0 (h - 1) (unmv 0 l (a :: a :: r)) = ins (h - 1) a (ins (l - 1) a r).
Proof. intros Hl. destruct l; [lia|]. unfold unmv. simpl. rewrite Nat.sub_0_r. reflexivity. Qed.

Ltac len2 :=
  simpl; repeat first
    [ rewrite length_swap
    | rewrite length_ins by len2
    | rewrite length_del by len2 ]; simpl; lia.

Ltac pointwise :=
  cbv beta; repeat match goal with
  | H : forall j, inb j _ -> _ = _ |- _ => rewrite H by (auto; constructor)
  end.

Section Meaning.
Context {F : Type} (A : arith F).

Lemma sem_transp_adj μ τ e t f p :
  sem A μ τ e = Some (t, f) ->
  sem A μ τ (ETransp (S p) (S p + 1) e) = Some (swap p (p + 1) t, fun j => f (swap p (p + 1) j)).
Proof.
  intros He. simpl. rewrite He. rewrite Nat.sub_0_r. replace (p + 1 - 0) with (p + 1) by lia.
  reflexivity.
Qed.

Lemma sem_down μ τ e t f k d :
  sem A μ τ e = Some (t, f) -> k + d < length t ->
  exists g, sem A μ τ (down (S k) d e) = Some (mv k d t, g) /\
    forall j, length j = length t -> g j = f (unmv k d j).
Proof.
  revert e t f; induction d as [|d IH]; intros e t f He Hl.
  - exists f. simpl. rewrite mv_0 by lia. split; auto. intros j Hj. rewrite unmv_0 by lia.
    reflexivity.
  - pose proof (sem_transp_adj μ τ e t f (k + d) He) as Ht.
    destruct (IH _ _ _ Ht) as [g [Hg Hgj]]; [rewrite length_swap; lia|].
    exists g. change (down (S k) (S d) e) with (down (S k) d (ETransp (S k + d) (S k + d + 1) e)).
    rewrite <- mv_step by lia. split; [exact Hg|].
    intros j Hj. rewrite Hgj by (rewrite length_swap; lia). rewrite unmv_step by lia.
    reflexivity.
Qed.

Lemma sem_up μ τ e t f k d :
  sem A μ τ e = Some (t, f) -> k + d < length t ->
  exists g, sem A μ τ (up (S k) d e) = Some (unmv k d t, g) /\
    forall j, length j = length t -> g j = f (mv k d j).
Proof.
  revert e t f; induction d as [|d IH]; intros e t f He Hl.
  - exists f. simpl. rewrite unmv_0 by lia. split; auto. intros j Hj. rewrite mv_0 by lia.
    reflexivity.
  - destruct (IH e t f He ltac:(lia)) as [g0 [Hg0 Hg0j]].
    pose proof (sem_transp_adj μ τ _ _ _ (k + d) Hg0) as Ht.
    exists (fun j => g0 (swap (k + d) (k + d + 1) j)).
    change (up (S k) (S d) e) with (ETransp (S k + d) (S k + d + 1) (up (S k) d e)).
    rewrite <- unmv_step by lia. split; [exact Ht|].
    intros j Hj. rewrite Hg0j by (rewrite length_swap; lia). rewrite mv_step by lia.
    reflexivity.
Qed.


(** The desugaring preserves meaning (spec/core.md, "Each equation holds by the semantics"):
    in a store that matches the context, a well-typed expression and its Core-TeIL form have
    the same type and the same value at every multi-index of it, including the order of every
    fold. *)
Theorem desugar_sem G μ e t τ :
  ctx_positive G -> store_ok (fun _ => True) G μ -> G ⊢ e ∈ t of τ ->
  exists f g, sem A μ τ e = Some (t, f) /\ sem A μ τ (desugar e) = Some (t, g) /\
    forall j, inb j t -> g j = f j.
Proof.
  intros HG Hμ Ht.
  induction Ht; try (simpl desugar).
  - (* T_Var *)
    destruct (sem_safe A _ G μ (EVar x) t τ (closed_true A) HG Hμ (T_Var G x t τ H))
      as [f [Hf _]].
    exists f, f. auto.
  - (* T_Paren *)
    destruct IHHt as [f [g [Hf [Hg Hfg]]]]. exists f, g. simpl. auto.
  - (* T_Lit *)
    eexists; eexists; split; [reflexivity|]. split; [reflexivity|]. auto.
  - (* T_Add *)
    destruct IHHt1 as [f0 [g0 [Hf0 [Hg0 H0]]]], IHHt2 as [f1 [g1 [Hf1 [Hg1 H1]]]].
    simpl. rewrite Hf0, Hf1, Hg0, Hg1.
    eexists; eexists; split; [reflexivity|]. split; [reflexivity|].
    intros j Hj. pointwise. reflexivity.
  - (* T_Mul *)
    destruct IHHt1 as [f0 [g0 [Hf0 [Hg0 H0]]]], IHHt2 as [f1 [g1 [Hf1 [Hg1 H1]]]].
    simpl. rewrite Hf0, Hf1, Hg0, Hg1.
    destruct (is_scalar t) eqn:Es;
      (eexists; eexists; split; [reflexivity|]; split; [reflexivity|]);
      intros j Hj.
    + destruct t; [|discriminate]. apply inb_nil in Hj. subst. pointwise. reflexivity.
    + pointwise. reflexivity.
  - (* T_Elem *)
    destruct IHHt1 as [f0 [g0 [Hf0 [Hg0 H0]]]], IHHt2 as [f1 [g1 [Hf1 [Hg1 H1]]]].
    simpl. rewrite Hf0, Hf1, Hg0, Hg1.
    destruct H as [-> | ->]; [|destruct (is_scalar t) eqn:Es];
      (eexists; eexists; split; [reflexivity|]; split; [reflexivity|]);
      intros j Hj.
    + pointwise. reflexivity.
    + destruct t; [|discriminate]. apply inb_nil in Hj. subst. pointwise. reflexivity.
    + pointwise. reflexivity.
  - (* T_SMul *)
    destruct IHHt1 as [f0 [g0 [Hf0 [Hg0 H0]]]], IHHt2 as [f1 [g1 [Hf1 [Hg1 H1]]]].
    simpl. rewrite Hf0, Hf1, Hg0, Hg1. simpl.
    eexists; eexists; split; [reflexivity|]. split; [reflexivity|].
    intros j Hj. assert (inb [] []) by constructor. pointwise. reflexivity.
  - (* T_SDiv *)
    destruct IHHt1 as [f0 [g0 [Hf0 [Hg0 H0]]]], IHHt2 as [f1 [g1 [Hf1 [Hg1 H1]]]].
    simpl. rewrite Hf0, Hf1, Hg0, Hg1. simpl.
    eexists; eexists; split; [reflexivity|]. split; [reflexivity|].
    intros j Hj. assert (inb [] []) by constructor. pointwise. reflexivity.
  - (* T_Prod *)
    destruct IHHt1 as [f0 [g0 [Hf0 [Hg0 H0]]]], IHHt2 as [f1 [g1 [Hf1 [Hg1 H1]]]].
    simpl. rewrite Hf0, Hf1, Hg0, Hg1.
    eexists; eexists; split; [reflexivity|]. split; [reflexivity|].
    intros j Hj. apply inb_app in Hj as [Hj0 Hj1]. pointwise. reflexivity.
  - (* T_Red *)
    destruct IHHt as [f [g [Hf [Hg Hfg]]]].
    destruct (sem_down μ τ _ _ _ 0 (i - 1) Hg ltac:(lia)) as [g' [Hg' Hg'j]].
    unfold front. simpl. rewrite Hf, Hg'.
    eexists; eexists; split; [reflexivity|]. split; [reflexivity|].
    intros j Hj. simpl. f_equal. apply map_ext_in. intros v Hv. apply in_seq in Hv.
    assert (length j = length t - 1) by (rewrite (inb_length _ _ Hj), length_del; lia).
    rewrite Hg'j by (simpl; lia). simpl.
    apply Hfg. apply inb_ins; auto; lia.
  - (* T_Transp *)
    destruct IHHt as [f [g [Hf [Hg Hfg]]]].
    simpl. rewrite Hf.
    destruct (Nat.eq_dec i j) as [<-|Hij].
    + unfold lo, hi. rewrite Nat.min_id, Nat.max_id, Nat.sub_diag. simpl.
      rewrite Hg. rewrite swap_same by lia.
      eexists; eexists; split; [reflexivity|]. split; [reflexivity|].
      intros k Hk. rewrite swap_same by (rewrite (inb_length _ _ Hk); lia). auto.
    + assert (Hs : forall p q, p < q -> q < length t -> swap p q t = swap (i - 1) (j - 1) t ->
                (forall k, length k = length t -> swap p q k = swap (i - 1) (j - 1) k) ->
                exists g', sem A μ τ (up (S p + 1) (S q - S p - 1) (down (S p) (S q - S p) (desugar e)))
                           = Some (swap (i - 1) (j - 1) t, g') /\
                           forall k, inb k (swap (i - 1) (j - 1) t) -> g' k = f (swap (i - 1) (j - 1) k)).
      { intros p q Hpq Hq Hst Hsk.
        replace (S q - S p) with (q - p) by lia. replace (S q - S p - 1) with (q - p - 1) by lia.
        destruct (sem_down μ τ _ _ _ p (q - p) Hg ltac:(lia)) as [g1 [Hg1 Hg1j]].
        destruct (sem_up μ τ _ _ _ (S p) (q - p - 1) Hg1 ltac:(rewrite length_mv; lia))
          as [g2 [Hg2 Hg2j]].
        replace (S p + 1) with (S (S p)) by lia.
        rewrite Hg2, transp_shape, Hst by lia. eexists; split; [reflexivity|].
        intros k Hk. pose proof (inb_length _ _ Hk) as Hl. rewrite length_swap in Hl.
        rewrite Hg2j by (rewrite length_mv; lia). rewrite Hg1j by (rewrite length_mv; lia).
        rewrite transp_index, Hsk by lia. apply Hfg. apply inb_swap; auto; lia. }
      destruct (lo_hi_cases i j Hij) as [[-> [-> Hlt]]|[-> [-> Hlt]]].
      * destruct (Hs (i - 1) (j - 1)) as [g' [Hg' Hg'k]]; try lia; auto.
        replace (S (i - 1)) with i in Hg' by lia. replace (S (j - 1)) with j in Hg' by lia.
        eexists; eexists; split; [reflexivity|]. split; [exact Hg'|]. exact Hg'k.
      * destruct (Hs (j - 1) (i - 1)) as [g' [Hg' Hg'k]]; try lia.
        { apply swap_comm; lia. }
        { intros k Hk. apply swap_comm; lia. }
        replace (S (i - 1)) with i in Hg' by lia. replace (S (j - 1)) with j in Hg' by lia.
        eexists; eexists; split; [reflexivity|]. split; [exact Hg'|]. exact Hg'k.
  - (* T_Diag *)
    destruct IHHt as [f [g [Hf [Hg Hfg]]]].
    destruct (lo_hi i j H1) as [Hlh Hij].
    assert (Hn : nth (lo i j - 1) t 0 = nth (hi i j - 1) t 0)
      by (destruct Hij as [[-> ->]|[-> ->]]; auto).
    assert (Hb : hi i j <= length t /\ 1 <= lo i j) by (destruct Hij as [[-> ->]|[-> ->]]; lia).
    simpl. rewrite Hf.
    remember (lo i j) as l. remember (hi i j) as h.
    destruct (sem_down μ τ _ _ _ 0 (h - 1) Hg ltac:(lia)) as [g1 [Hg1 Hg1j]].
    destruct (sem_down μ τ _ _ _ 0 l Hg1 ltac:(rewrite length_mv; lia)) as [g2 [Hg2 Hg2j]].
    rewrite front2 in Hg2 by lia.
    assert (Hd : sem A μ τ (EDiag 1 2 (front (l + 1) (front h (desugar e))))
                 = Some (nth (l - 1) t 0 :: del (l - 1) (del (h - 1) t),
                         fun k => g2 (ins 1 (nth 0 k 0) k))).
    { unfold front. replace (l + 1 - 1) with l by lia. simpl. rewrite Hg2. reflexivity. }
    destruct (sem_up μ τ _ _ _ 0 (l - 1) Hd ltac:(simpl; len2)) as [g3 [Hg3 Hg3j]].
    unfold back. rewrite Hg3.
    assert (Hs : unmv 0 (l - 1) (nth (l - 1) t 0 :: del (l - 1) (del (h - 1) t))
                 = del (h - 1) t).
    { unfold unmv. simpl. rewrite <- (nth_del_lt (l - 1) (h - 1) t 0) by lia.
      apply ins_nth_del. len2. }
    rewrite Hs. eexists; eexists; split; [reflexivity|]. split; [reflexivity|].
    intros k Hk.
    assert (Hlk : length k = length t - 1) by (rewrite (inb_length _ _ Hk); len2).
    rewrite Hg3j by (simpl; rewrite Hlk; len2). cbv beta.
    replace (ins 1 (nth 0 (mv 0 (l - 1) k) 0) (mv 0 (l - 1) k))
      with (nth (l - 1) k 0 :: nth (l - 1) k 0 :: del (l - 1) k) by reflexivity.
    rewrite Hg2j by (rewrite length_mv by lia; simpl; len2).
    rewrite Hg1j by (rewrite length_unmv by len2; len2).
    rewrite front2_index, ins_nth_del by lia.
    apply Hfg.
    pose proof (inb_nth _ _ (l - 1) Hk) as Hl.
    rewrite length_del, nth_del_lt in Hl by lia.
    apply inb_ins; auto; [lia|]. rewrite <- Hn. apply Hl. lia.
  - (* T_Contr *)
    destruct IHHt as [f [g [Hf [Hg Hfg]]]].
    destruct (lo_hi i j H1) as [Hlh Hij].
    assert (Hn : nth (lo i j - 1) t 0 = nth (hi i j - 1) t 0)
      by (destruct Hij as [[-> ->]|[-> ->]]; auto).
    assert (Hb : hi i j <= length t /\ 1 <= lo i j) by (destruct Hij as [[-> ->]|[-> ->]]; lia).
    simpl. rewrite Hf.
    remember (lo i j) as l. remember (hi i j) as h.
    destruct (sem_down μ τ _ _ _ 0 (h - 1) Hg ltac:(lia)) as [g1 [Hg1 Hg1j]].
    destruct (sem_down μ τ _ _ _ 0 l Hg1 ltac:(rewrite length_mv; lia)) as [g2 [Hg2 Hg2j]].
    rewrite front2 in Hg2 by lia.
    unfold front. replace (l + 1 - 1) with l by lia. simpl. rewrite Hg2.
    eexists; eexists; split; [reflexivity|]. split; [reflexivity|].
    intros k Hk.
    assert (Hlk : length k = length t - 2) by (rewrite (inb_length _ _ Hk); len2).
    change (redop_den A RSum τ) with (binop_den A Add τ). simpl.
    f_equal. apply map_ext_in. intros v Hv. apply in_seq in Hv.
    rewrite Hg2j by (rewrite length_mv by lia; simpl; len2).
    rewrite Hg1j by (rewrite length_unmv by len2; len2).
    rewrite front2_index by lia.
    apply Hfg.
    apply inb_ins; [|lia|rewrite <- Hn; lia].
    apply inb_ins; auto.
    * len2.
    * rewrite nth_del_lt by lia. lia.
  - (* T_Expa *)
    destruct IHHt as [f [g [Hf [Hg Hfg]]]].
    assert (He : sem A μ τ (EExpa 1 n (desugar e)) = Some (n :: t, fun j => g (del 0 j)))
      by (simpl; rewrite Hg; reflexivity).
    destruct (sem_up μ τ _ _ _ 0 (i - 1) He ltac:(simpl; lia)) as [g' [Hg' Hg'j]].
    unfold back. simpl. rewrite Hf, Hg'.
    eexists; eexists; split; [reflexivity|]. split; [reflexivity|].
    intros j Hj. assert (length j = S (length t))
      by (rewrite (inb_length _ _ Hj), length_ins; lia).
    rewrite Hg'j by (simpl; lia). simpl.
    apply Hfg. eapply inb_del; eauto; lia.
  - (* T_Proj *)
    destruct IHHt as [f [g [Hf [Hg Hfg]]]].
    destruct (sem_down μ τ _ _ _ 0 (i - 1) Hg ltac:(lia)) as [g' [Hg' Hg'j]].
    unfold front. simpl. rewrite Hf, Hg'.
    eexists; eexists; split; [reflexivity|]. split; [reflexivity|].
    intros j Hj.
    assert (length j = length t - 1) by (rewrite (inb_length _ _ Hj), length_del; lia).
    simpl. rewrite Hg'j by (simpl; lia). simpl.
    apply Hfg. apply inb_ins; auto; lia.
  - (* T_Func *)
    destruct IHHt as [f0 [g0 [Hf [Hg Hfg]]]].
    simpl. rewrite Hf, Hg.
    eexists; eexists; split; [reflexivity|]. split; [reflexivity|].
    intros j Hj. cbv beta. now rewrite Hfg.
  - (* T_Func2 *)
    destruct IHHt1 as [f0 [g0 [Hf0 [Hg0 H0]]]], IHHt2 as [f1 [g1 [Hf1 [Hg1 H1]]]].
    simpl. rewrite Hf0, Hf1, Hg0, Hg1.
    eexists; eexists; split; [reflexivity|]. split; [reflexivity|].
    intros j Hj. pointwise. reflexivity.
  - (* T_Conv *)
    destruct IHHt as [f [g [Hf [Hg Hfg]]]].
    simpl. rewrite etype_eqb_refl, Hf, Hg.
    eexists; eexists; split; [reflexivity|]. split; [reflexivity|].
    intros j Hj. cbv beta. now rewrite Hfg.
Qed.

End Meaning.

(** ** The desugared program *)

Lemma is_core_down l d e : is_core (down l d e) = is_core e.
Proof.
  revert e; induction d as [|d IH]; intros e; simpl; auto.
  rewrite IH. simpl. now rewrite Nat.eqb_refl.
Qed.

Lemma is_core_up l d e : is_core (up l d e) = is_core e.
Proof. induction d as [|d IH]; simpl; auto. now rewrite Nat.eqb_refl, IH. Qed.

(** The desugaring yields Core-TeIL forms only. *)
Theorem desugar_is_core e : is_core (desugar e) = true.
Proof.
  induction e; simpl; unfold front, back;
    repeat (rewrite is_core_up || rewrite is_core_down || simpl);
    rewrite ?IHe, ?IHe1, ?IHe2; auto.
Qed.

(** The desugared program is well formed, with the same context (so every statement keeps its
    types). *)
Theorem desugar_prog_ok p G : prog_ok p G -> prog_ok (desugar_prog p) G.
Proof.
  intros Hp. inversion Hp as [ds ss G' Hds Hss]; subst. constructor; auto. simpl.
  clear Hp Hds. induction Hss as [|s ss Hs Hss IH]; simpl; constructor; auto.
  destruct Hs as [x e t Hx He]. econstructor; eauto. apply desugar_typing; auto.
Qed.

Section Run.
Context {F : Type} (A : arith F).

(** Two stores that hold tensors of the declared shapes and element types with the same
    elements. *)
Definition store_agree (G : ctx) (μ1 μ2 : @store F) : Prop :=
  forall x t τ, lookup G x = Some (t, τ) ->
  exists T1 T2, μ1 x = Some T1 /\ μ2 x = Some T2 /\ tshape T1 = t /\ tshape T2 = t /\
    telem T1 = τ /\ telem T2 = τ /\ forall j, inb j t -> tget T1 j = tget T2 j.

Ltac same_pointwise :=
  eexists; eexists; split; [reflexivity|]; split; [reflexivity|].

(** The value of a well-typed expression depends only on the elements of the store at the
    multi-indices of the declared types. *)
Lemma sem_agree G μ1 μ2 e t τ :
  store_agree G μ1 μ2 -> G ⊢ e ∈ t of τ ->
  exists f1 f2, sem A μ1 τ e = Some (t, f1) /\ sem A μ2 τ e = Some (t, f2) /\
    forall j, inb j t -> f1 j = f2 j.
Proof.
  intros Hag He. induction He; simpl.
  - destruct (Hag x t τ H) as [T1 [T2 [E1 [E2 [S1 [S2 [L1 [L2 Hj]]]]]]]].
    rewrite E1, E2, L1, L2, etype_eqb_refl, S1, S2. same_pointwise.
    intros j Hjt. unfold read. rewrite S1, S2. apply inbb_inb in Hjt as Hb. rewrite Hb.
    f_equal. auto.
  - exact IHHe.
  - same_pointwise. auto.
  - destruct IHHe1 as [f0 [g0 [Hf0 [Hg0 H0]]]], IHHe2 as [f1 [g1 [Hf1 [Hg1 H1]]]].
    rewrite Hf0, Hf1, Hg0, Hg1. same_pointwise. intros j Hj. pointwise. reflexivity.
  - destruct IHHe1 as [f0 [g0 [Hf0 [Hg0 H0]]]], IHHe2 as [f1 [g1 [Hf1 [Hg1 H1]]]].
    rewrite Hf0, Hf1, Hg0, Hg1.
    destruct (is_scalar t) eqn:Es; same_pointwise; intros j Hj.
    + destruct t; [|discriminate]. apply inb_nil in Hj. subst. pointwise. reflexivity.
    + pointwise. reflexivity.
  - destruct IHHe1 as [f0 [g0 [Hf0 [Hg0 H0]]]], IHHe2 as [f1 [g1 [Hf1 [Hg1 H1]]]].
    rewrite Hf0, Hf1, Hg0, Hg1.
    destruct H as [-> | ->]; [|destruct (is_scalar t) eqn:Es]; same_pointwise; intros j Hj.
    + pointwise. reflexivity.
    + destruct t; [|discriminate]. apply inb_nil in Hj. subst. pointwise. reflexivity.
    + pointwise. reflexivity.
  - destruct IHHe1 as [f0 [g0 [Hf0 [Hg0 H0]]]], IHHe2 as [f1 [g1 [Hf1 [Hg1 H1]]]].
    rewrite Hf0, Hf1, Hg0, Hg1. simpl. same_pointwise.
    intros j Hj. assert (inb [] []) by constructor. pointwise. reflexivity.
  - destruct IHHe1 as [f0 [g0 [Hf0 [Hg0 H0]]]], IHHe2 as [f1 [g1 [Hf1 [Hg1 H1]]]].
    rewrite Hf0, Hf1, Hg0, Hg1. simpl. same_pointwise.
    intros j Hj. assert (inb [] []) by constructor. pointwise. reflexivity.
  - destruct IHHe1 as [f0 [g0 [Hf0 [Hg0 H0]]]], IHHe2 as [f1 [g1 [Hf1 [Hg1 H1]]]].
    rewrite Hf0, Hf1, Hg0, Hg1. same_pointwise.
    intros j Hj. apply inb_app in Hj as [Hj0 Hj1]. pointwise. reflexivity.
  - destruct IHHe as [f [g [Hf [Hg Hfg]]]]. rewrite Hf, Hg. same_pointwise.
    intros j Hj. cbv beta. f_equal. apply map_ext_in. intros v Hv. apply in_seq in Hv.
    apply Hfg. apply inb_ins; auto; lia.
  - destruct IHHe as [f [g [Hf [Hg Hfg]]]]. rewrite Hf, Hg. same_pointwise.
    intros k Hk. apply Hfg. apply inb_swap; auto; lia.
  - destruct IHHe as [f [g [Hf [Hg Hfg]]]]. rewrite Hf, Hg. same_pointwise.
    intros k Hk. apply Hfg. destruct (lo_hi i j H1) as [Hlh Hij].
    assert (Hn : nth (lo i j - 1) t 0 = nth (hi i j - 1) t 0)
      by (destruct Hij as [[-> ->]|[-> ->]]; auto).
    assert (hi i j <= length t /\ 1 <= lo i j) by (destruct Hij as [[-> ->]|[-> ->]]; lia).
    pose proof (inb_nth _ _ (lo i j - 1) Hk) as Hl.
    rewrite length_del, nth_del_lt in Hl by lia.
    apply inb_ins; auto; [lia|]. rewrite <- Hn. apply Hl. lia.
  - destruct IHHe as [f [g [Hf [Hg Hfg]]]]. rewrite Hf, Hg. same_pointwise.
    intros k Hk. destruct (lo_hi i j H1) as [Hlh Hij].
    assert (Hn : nth (lo i j - 1) t 0 = nth (hi i j - 1) t 0)
      by (destruct Hij as [[-> ->]|[-> ->]]; auto).
    assert (hi i j <= length t /\ 1 <= lo i j) by (destruct Hij as [[-> ->]|[-> ->]]; lia).
    cbv beta. f_equal. apply map_ext_in. intros v Hv. apply in_seq in Hv.
    apply Hfg. apply inb_ins; [|lia|rewrite <- Hn; lia].
    apply inb_ins; auto.
    + rewrite length_del; lia.
    + rewrite nth_del_lt by lia. lia.
  - destruct IHHe as [f [g [Hf [Hg Hfg]]]]. rewrite Hf, Hg. same_pointwise.
    intros k Hk. apply Hfg. eapply inb_del; eauto; lia.
  - destruct IHHe as [f [g [Hf [Hg Hfg]]]]. rewrite Hf, Hg. same_pointwise.
    intros k Hk. apply Hfg. apply inb_ins; auto; lia.
  - destruct IHHe as [f0 [g0 [Hf [Hg Hfg]]]]. rewrite Hf, Hg. same_pointwise.
    intros j Hj. cbv beta. now rewrite Hfg.
  - destruct IHHe1 as [f0 [g0 [Hf0 [Hg0 H0]]]], IHHe2 as [f1 [g1 [Hf1 [Hg1 H1]]]].
    rewrite Hf0, Hf1, Hg0, Hg1. same_pointwise. intros j Hj. pointwise. reflexivity.
  - rewrite etype_eqb_refl. destruct IHHe as [f [g [Hf [Hg Hfg]]]]. rewrite Hf, Hg.
    same_pointwise. intros j Hj. cbv beta. now rewrite Hfg.
Qed.

Lemma store_agree_refl G μ : store_ok (fun _ => True) G μ -> store_agree G μ μ.
Proof.
  intros H x t τ Hx. destruct (H x t τ Hx) as [T [E [S [L _]]]]. exists T, T. auto 10.
Qed.

Lemma store_agree_ok1 G μ1 μ2 : store_agree G μ1 μ2 -> store_ok (fun _ => True) G μ1.
Proof.
  intros H x t τ Hx. destruct (H x t τ Hx) as [T1 [T2 [H1 [_ [Hs [_ [Hl _]]]]]]]. eauto.
Qed.

Lemma store_agree_ok2 G μ1 μ2 : store_agree G μ1 μ2 -> store_ok (fun _ => True) G μ2.
Proof.
  intros H x t τ Hx. destruct (H x t τ Hx) as [T1 [T2 [_ [H2 [_ [Hs [_ [Hl _]]]]]]]]. eauto.
Qed.

Lemma desugar_stmts_agree G ss μ1 μ2 :
  ctx_positive G -> stmts_ok G ss -> store_agree G μ1 μ2 ->
  exists μ1' μ2', exec_stmts A μ1 ss = Some μ1' /\
    exec_stmts A μ2 (map desugar_stmt ss) = Some μ2' /\ store_agree G μ1' μ2'.
Proof.
  intros HG Hss. revert μ1 μ2. induction Hss as [|s ss Hs Hss IH]; intros μ1 μ2 Hag.
  - exists μ1, μ2. auto.
  - pose proof (store_agree_ok1 _ _ _ Hag) as Hμ1. pose proof (store_agree_ok2 _ _ _ Hag) as Hμ2.
    destruct Hs as [x e t τ Hx He].
    assert (Hs' : stmt_ok G (desugar_stmt (Stmt x e)))
      by (econstructor; eauto; apply desugar_typing; auto).
    destruct (stmt_safe A _ G μ1 (Stmt x e) (closed_true A) HG Hμ1 (OK_Stmt G x e t τ Hx He))
      as [μ1' [t1 [τ1 [f1 [T1 [E1 [S1 [L1 [X1 [Sh1 [El1 [V1 [O1 _]]]]]]]]]]]]].
    destruct (stmt_safe A _ G μ2 _ (closed_true A) HG Hμ2 Hs')
      as [μ2' [t2 [τ2 [f2 [T2 [E2 [S2 [L2 [X2 [Sh2 [El2 [V2 [O2 _]]]]]]]]]]]]].
    simpl in *. rewrite Hx in L1, L2. injection L1 as <- <-. injection L2 as <- <-.
    assert (Hag' : store_agree G μ1' μ2').
    { intros y u υ Hy. destruct (String.eqb_spec y x) as [->|Hne].
      - rewrite Hx in Hy. injection Hy as <- <-. exists T1, T2. repeat split; auto.
        intros j Hj.
        destruct (sem_agree G μ1 μ2 e t τ Hag He) as [g1 [g2 [G1 [G2 H12]]]].
        destruct (desugar_sem A G μ2 e t τ HG Hμ2 He) as [h1 [h2 [K1 [K2 H2]]]].
        rewrite S1 in G1. injection G1 as <-. rewrite G2 in K1. injection K1 as <-.
        rewrite S2 in K2. injection K2 as <-.
        pose proof (V1 j Hj) as W1. pose proof (V2 j Hj) as W2.
        rewrite H12, <- H2, W2 in W1 by auto. congruence.
      - rewrite O1, O2 by auto. apply Hag; auto. }
    destruct (IH μ1' μ2' Hag') as [μ1'' [μ2'' [R1 [R2 Hag'']]]].
    exists μ1'', μ2''. simpl. rewrite E1, E2. auto.
Qed.

(** The desugared program computes the same store as the program, element by element
    (spec/core.md: "evaluates to the same store"), whatever the caller supplies. *)
Theorem desugar_run p G arg :
  prog_ok p G ->
  exists μ1 μ2, run A p arg = Some μ1 /\ run A (desugar_prog p) arg = Some μ2 /\
    store_agree G μ1 μ2.
Proof.
  intros Hp. inversion Hp as [ds ss G' Hds Hss]; subst. unfold run; simpl.
  apply desugar_stmts_agree; auto.
  - eapply decls_ok_positive; eauto. intros x t τ H; discriminate.
  - apply store_agree_refl. apply init_store_ok; auto.
Qed.

End Run.
