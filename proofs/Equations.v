(** * The equations of spec/semantics.md, one lemma per equation, in the spec's form.

    [sem] (Semantics.v) has one arm per equation; these lemmas restate each arm given the
    values of the operands, so that spec/semantics.md can name them. Each holds by
    computation. [τ] is the element type the expression is computed in (Semantics.v): every
    operation is the one of that type, and a literal is read in it. *)

From Coq Require Import String List Arith Lia Bool.
From TeIL Require Import Lists Syntax Semantics.
Import ListNotations.

Section Equations.
Context {F : Type} (A : arith F).


(** A variable is read in its own element type. *)
Lemma S_Var μ x T : μ x = Some T -> sem A μ (telem T) (EVar x) = Some (tshape T, read T).
Proof. intros H. simpl. rewrite H, etype_eqb_refl. reflexivity. Qed.

Lemma S_Paren μ τ e : sem A μ τ (EParen e) = sem A μ τ e.
Proof. reflexivity. Qed.

(** A literal's value is its decimal read in the element type its context gives it. *)
Lemma S_Lit μ τ c fin :
  sem A μ τ (ELit c fin) =
  Some ([], fun j => match j with [] => Some (Def (f_lit A τ c)) | _ => None end).
Proof. reflexivity. Qed.

Section Binary.
Variables (μ : @store F) (τ : etype) (e0 e1 : expr) (t0 t1 : shape) (f0 f1 : @den F).
Context (H0 : sem A μ τ e0 = Some (t0, f0)) (H1 : sem A μ τ e1 = Some (t1, f1)).

Lemma S_Add : sem A μ τ (EBin Add e0 e1) = Some (t0, fun j => map2 (binop_den A Add τ) (f0 j) (f1 j)).
Proof. simpl. now rewrite H0, H1. Qed.

Lemma S_Sub : sem A μ τ (EBin Sub e0 e1) = Some (t0, fun j => map2 (binop_den A Sub τ) (f0 j) (f1 j)).
Proof. simpl. now rewrite H0, H1. Qed.

Lemma S_Mul : t0 <> [] ->
  sem A μ τ (EBin Mul e0 e1) = Some (t0, fun j => map2 (binop_den A Mul τ) (f0 j) (f1 j)).
Proof. intros Ht. simpl. rewrite H0, H1. destruct t0; [congruence|reflexivity]. Qed.

Lemma S_SMul : t0 = [] ->
  sem A μ τ (EBin Mul e0 e1) = Some (t1, fun j => map2 (binop_den A Mul τ) (f0 []) (f1 j)).
Proof. intros ->. simpl. now rewrite H0, H1. Qed.

Lemma S_Div : t1 <> [] ->
  sem A μ τ (EBin Div e0 e1) = Some (t0, fun j => map2 (binop_den A Div τ) (f0 j) (f1 j)).
Proof. intros Ht. simpl. rewrite H0, H1. destruct t1; [congruence|reflexivity]. Qed.

Lemma S_SDiv : t1 = [] ->
  sem A μ τ (EBin Div e0 e1) = Some (t0, fun j => map2 (binop_den A Div τ) (f0 j) (f1 [])).
Proof. intros ->. simpl. now rewrite H0, H1. Qed.

Lemma S_Prod :
  sem A μ τ (EProd e0 e1) = Some (t0 ++ t1, fun j =>
    map2 (binop_den A Mul τ) (f0 (firstn (length t0) j)) (f1 (skipn (length t0) j))).
Proof. simpl. now rewrite H0, H1. Qed.

(** On two scalars [S-Mul] and [S-SMul] coincide: both read the operands at [()]. *)
Lemma S_Mul_SMul_scalars :
  t0 = [] -> t1 = [] -> forall j, inb j [] ->
  map2 (binop_den A Mul τ) (f0 j) (f1 j) = map2 (binop_den A Mul τ) (f0 []) (f1 j).
Proof. intros _ _ j Hj. apply inb_nil in Hj. now subst. Qed.

(** [max e0 e1], [min e0 e1]: element-wise. *)
Lemma S_Func2 g :
  sem A μ τ (EFunc2 g e0 e1) = Some (t0, fun j => map2 (func2_den A g) (f0 j) (f1 j)).
Proof. simpl. now rewrite H0, H1. Qed.
End Binary.

Section Unary.
Variables (μ : @store F) (τ : etype) (e : expr) (t : shape) (f : @den F).
Context (H : sem A μ τ e = Some (t, f)).

Lemma S_Red o p :
  sem A μ τ (ERed o p e) = Some (del (p - 1) t, fun j =>
    fold1 (redop_den A o τ) (map (fun v => f (ins (p - 1) v j)) (seq 1 (nth (p - 1) t 0)))).
Proof. simpl. now rewrite H. Qed.

Lemma S_Transp p q :
  sem A μ τ (ETransp p q e) = Some (swap (p - 1) (q - 1) t, fun j => f (swap (p - 1) (q - 1) j)).
Proof. simpl. now rewrite H. Qed.

Lemma S_Diag p q :
  sem A μ τ (EDiag p q e) =
  Some (del (hi p q - 1) t, fun j => f (ins (hi p q - 1) (nth (lo p q - 1) j 0) j)).
Proof. simpl. now rewrite H. Qed.

Lemma S_Contr p q :
  sem A μ τ (EContr p q e) = Some (del (lo p q - 1) (del (hi p q - 1) t), fun j =>
    fold1 (binop_den A Add τ)
      (map (fun v => f (ins (hi p q - 1) v (ins (lo p q - 1) v j))) (seq 1 (nth (lo p q - 1) t 0)))).
Proof. simpl. now rewrite H. Qed.

Lemma S_Expa p n :
  sem A μ τ (EExpa p n e) = Some (ins (p - 1) n t, fun j => f (del (p - 1) j)).
Proof. simpl. now rewrite H. Qed.

Lemma S_Proj p m :
  sem A μ τ (EProj p m e) = Some (del (p - 1) t, fun j => f (ins (p - 1) m j)).
Proof. simpl. now rewrite H. Qed.

(** [exp e], ...: the function of [e]'s element type, element-wise. *)
Lemma S_Func g :
  sem A μ τ (EFunc g e) = Some (t, fun j => map1 (func_den A g τ) (f j)).
Proof. simpl. now rewrite H. Qed.

(** [contr p q e = contr q p e] and [diag p q e = diag q p e] (the remarks of
    spec/semantics.md): the equations depend on [min] and [max] of the positions only. *)
Lemma S_Contr_sym p q : sem A μ τ (EContr p q e) = sem A μ τ (EContr q p e).
Proof. simpl. unfold lo, hi. now rewrite Nat.min_comm, Nat.max_comm. Qed.

Lemma S_Diag_sym p q : sem A μ τ (EDiag p q e) = sem A μ τ (EDiag q p e).
Proof. simpl. unfold lo, hi. now rewrite Nat.min_comm, Nat.max_comm. Qed.
(** [contr p q e = red+ l (diag l h e)] as functions, with the summation in the same order
    (the TeIL paper's definition (6); the remark on [S-Contr] in spec/semantics.md). *)
Lemma S_Contr_red_diag p q :
  p <> q -> 1 <= p <= length t -> 1 <= q <= length t ->
  exists g, sem A μ τ (ERed RSum (lo p q) (EDiag (lo p q) (hi p q) e)) =
              Some (del (lo p q - 1) (del (hi p q - 1) t), g) /\
    forall j, length j + 2 = length t -> exists g',
      sem A μ τ (EContr p q e) = Some (del (lo p q - 1) (del (hi p q - 1) t), g') /\ g j = g' j.
Proof.
  intros Hpq Hp Hq. assert (Hl : lo (lo p q) (hi p q) = lo p q /\ hi (lo p q) (hi p q) = hi p q)
    by (unfold lo, hi; lia).
  destruct Hl as [Hl Hh].
  simpl. rewrite H. rewrite Hl, Hh. eexists; split; [reflexivity|].
  intros j Hj. eexists; split; [reflexivity|]. simpl.
  rewrite nth_del_lt by (unfold lo, hi; lia).
  assert (N : forall k v (l : list nat), k <= length l -> nth k (ins k v l) 0 = v).
  { intros k v. induction k; intros [|a l] Hk; simpl in *; auto; try lia. apply IHk. lia. }
  f_equal. apply map_ext. intros v. rewrite N by (unfold lo, hi in *; lia). reflexivity.
Qed.

(** [proj p m (expa p n e)] is [e] (TeIL paper §3.6, equation (3); the remark on [S-Expa] and
    [S-Proj] in spec/semantics.md). *)
Lemma S_Proj_Expa p n m :
  1 <= p <= length t + 1 ->
  exists g, sem A μ τ (EProj p m (EExpa p n e)) = Some (t, g) /\ forall j, length j = length t -> g j = f j.
Proof.
  intros Hp. simpl. rewrite H.
  assert (D : forall (l : list nat) k x, k <= length l -> del k (ins k x l) = l).
  { intros l k x. revert l. induction k; intros [|y l] Hk; simpl in *; auto; try lia.
    rewrite IHk by lia. reflexivity. }
  rewrite D by lia. eexists; split; [reflexivity|]. intros j Hj. cbv beta. rewrite D by lia.
  reflexivity.
Qed.
End Unary.

(** [f32 e], [f64 e]: [e] computed in the other element type, each element converted (to
    [f32]: rounded; to [f64]: exact, [conv]). *)
Lemma S_Conv μ τ e t f :
  sem A μ (other τ) e = Some (t, f) ->
  sem A μ τ (EConv τ e) = Some (t, fun j => map1 (conv_den A τ) (f j)).
Proof. intros H. simpl. rewrite etype_eqb_refl, H. reflexivity. Qed.

(** [St-Seq]. *)
Lemma St_Seq_nil μ : exec_stmts A μ [] = Some μ.
Proof. reflexivity. Qed.

Lemma St_Seq_cons μ μ' s ss :
  exec_stmt A μ s = Some μ' -> exec_stmts A μ (s :: ss) = exec_stmts A μ' ss.
Proof. intros H. simpl. now rewrite H. Qed.

End Equations.
