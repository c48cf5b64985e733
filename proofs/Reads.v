(** * Every read is in bounds, stated on the reads themselves.

    [sem] (Semantics.v) reads tensors only through [read], which fails outside the index set,
    and [sem_safe] shows that a well-typed expression is defined at every multi-index of its
    type, so no read fails. This file states the same fact without relying on the strictness
    of [sem]'s combinators: [reads G e j] lists the elements [(x, k)] that the equations of
    spec/semantics.md read to compute [⟦e⟧ j] (the types [τ(e)] they mention are the checker's,
    [infer]), and [reads_in_bounds] shows that each is in the index set of [x]'s declared type
    (TeIL paper Lemma 4.3, report Lemma 2). *)

From Coq Require Import String List Arith Lia Bool.
From TeIL Require Import Lists Syntax Checker.
Import ListNotations.

Definition shape_of (G : ctx) (e : expr) : shape :=
  match infer G e with Ok (t, _) => t | Err _ _ => [] end.

Fixpoint reads (G : ctx) (e : expr) (j : list nat) : list (name * list nat) :=
  match e with
  | EVar x => [(x, j)]
  | ELit _ _ => []
  | EParen e => reads G e j
  | EBin o e0 e1 =>
      match o with
      | Mul => if is_scalar (shape_of G e0) then reads G e0 [] ++ reads G e1 j
               else reads G e0 j ++ reads G e1 j
      | Div => if is_scalar (shape_of G e1) then reads G e0 j ++ reads G e1 []
               else reads G e0 j ++ reads G e1 j
      | _ => reads G e0 j ++ reads G e1 j
      end
  | EProd e0 e1 =>
      let n := length (shape_of G e0) in reads G e0 (firstn n j) ++ reads G e1 (skipn n j)
  | ERed _ i e =>
      flat_map (fun v => reads G e (ins (i - 1) v j)) (seq 1 (nth (i - 1) (shape_of G e) 0))
  | ETransp p q e => reads G e (swap (p - 1) (q - 1) j)
  | EDiag p q e => reads G e (ins (hi p q - 1) (nth (lo p q - 1) j 0) j)
  | EContr p q e =>
      flat_map (fun v => reads G e (ins (hi p q - 1) v (ins (lo p q - 1) v j)))
               (seq 1 (nth (lo p q - 1) (shape_of G e) 0))
  | EExpa p _ e => reads G e (del (p - 1) j)
  | EProj p m e => reads G e (ins (p - 1) m j)
  | EFunc _ e | EConv _ e => reads G e j
  | EFunc2 _ e0 e1 => reads G e0 j ++ reads G e1 j
  end.

Lemma shape_of_typed G e t τ : G ⊢ e ∈ t of τ -> shape_of G e = t.
Proof.
  intros H. unfold shape_of. destruct (infer_complete _ _ _ _ H) as [k [-> _]]. reflexivity.
Qed.

(** Every element a well-typed expression reads, at a multi-index of its type, is inside the
    declared type of the variable it reads. *)
Theorem reads_in_bounds G e t τ j x k :
  G ⊢ e ∈ t of τ -> inb j t -> In (x, k) (reads G e j) ->
  exists u υ, lookup G x = Some (u, υ) /\ inb k u.
Proof.
  intros He. revert j.
  assert (Hnil : inb [] []) by constructor.
  induction He; intros jj Hj Hin; simpl in Hin.
  - (* T_Var *) destruct Hin as [Hin|[]]. injection Hin as <- <-. eauto.
  - (* T_Paren *) eauto.
  - (* T_Lit *) destruct Hin.
  - (* T_Add *) apply in_app_or in Hin as [Hin|Hin]; eauto.
  - (* T_Mul *)
    rewrite (shape_of_typed _ _ _ _ He1) in Hin.
    destruct (is_scalar t) eqn:Es; [destruct t; [|discriminate]; apply inb_nil in Hj; subst|];
      apply in_app_or in Hin as [Hin|Hin]; eauto.
  - (* T_Elem *)
    destruct H as [-> | ->]; simpl in Hin; [apply in_app_or in Hin as [Hin|Hin]; eauto|].
    rewrite (shape_of_typed _ _ _ _ He2) in Hin.
    destruct (is_scalar t) eqn:Es; [destruct t; [|discriminate]; apply inb_nil in Hj; subst|];
      apply in_app_or in Hin as [Hin|Hin]; eauto.
  - (* T_SMul *)
    rewrite (shape_of_typed _ _ _ _ He1) in Hin. simpl in Hin.
    apply in_app_or in Hin as [Hin|Hin]; eauto.
  - (* T_SDiv *)
    rewrite (shape_of_typed _ _ _ _ He2) in Hin. simpl in Hin.
    apply in_app_or in Hin as [Hin|Hin]; eauto.
  - (* T_Prod *)
    rewrite (shape_of_typed _ _ _ _ He1) in Hin. apply inb_app in Hj as [Hj0 Hj1].
    apply in_app_or in Hin as [Hin|Hin]; eauto.
  - (* T_Red *)
    rewrite (shape_of_typed _ _ _ _ He) in Hin.
    apply in_flat_map in Hin as [v [Hv Hin]]. apply in_seq in Hv.
    eapply IHHe; [|exact Hin]. apply inb_ins; auto; lia.
  - (* T_Transp *)
    eapply IHHe; [|exact Hin]. apply inb_swap; auto; lia.
  - (* T_Diag *)
    eapply IHHe; [|exact Hin].
    destruct (lo_hi i j H1) as [Hlh Hij].
    assert (Hn : nth (lo i j - 1) t 0 = nth (hi i j - 1) t 0)
      by (destruct Hij as [[-> ->]|[-> ->]]; auto).
    assert (hi i j <= length t /\ 1 <= lo i j) by (destruct Hij as [[-> ->]|[-> ->]]; lia).
    pose proof (inb_nth _ _ (lo i j - 1) Hj) as Hl.
    rewrite length_del, nth_del_lt in Hl by lia.
    apply inb_ins; auto; [lia|]. rewrite <- Hn. apply Hl. lia.
  - (* T_Contr *)
    rewrite (shape_of_typed _ _ _ _ He) in Hin.
    apply in_flat_map in Hin as [v [Hv Hin]]. apply in_seq in Hv.
    eapply IHHe; [|exact Hin].
    destruct (lo_hi i j H1) as [Hlh Hij].
    assert (Hn : nth (lo i j - 1) t 0 = nth (hi i j - 1) t 0)
      by (destruct Hij as [[-> ->]|[-> ->]]; auto).
    assert (hi i j <= length t /\ 1 <= lo i j) by (destruct Hij as [[-> ->]|[-> ->]]; lia).
    apply inb_ins; [|lia|rewrite <- Hn; lia].
    apply inb_ins; auto.
    + rewrite length_del; lia.
    + rewrite nth_del_lt by lia. lia.
  - (* T_Expa *)
    eapply IHHe; [|exact Hin]. eapply inb_del; eauto; lia.
  - (* T_Proj *)
    eapply IHHe; [|exact Hin]. apply inb_ins; auto; lia.
  - (* T_Func *) eauto.
  - (* T_Func2 *) apply in_app_or in Hin as [Hin|Hin]; eauto.
  - (* T_Conv *) eauto.
Qed.

(** For a statement [x = e] of a well-formed program: computing any element of [x] reads only
    elements inside the declared types (and [x] is written exactly on [I(Γ(x))], by
    [exec_stmt]). *)
Corollary stmt_reads_in_bounds G x e t τ j y k :
  stmt_ok G (Stmt x e) -> lookup G x = Some (t, τ) -> inb j t -> In (y, k) (reads G e j) ->
  exists u υ, lookup G y = Some (u, υ) /\ inb k u.
Proof.
  intros Hs Hx Hj Hin. inversion Hs as [? ? u υ Hx' He]; subst.
  rewrite Hx in Hx'. injection Hx' as <- <-. eapply reads_in_bounds; eauto.
Qed.
