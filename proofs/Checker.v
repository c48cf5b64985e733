(** * The checker: an executable function for the typing rules, sound and complete.

    [infer] returns the type of an expression or the rule and diagnostic code of the first
    premise it finds violated (left operand first, then the right; for one node, its premises in the order
    of the tables of spec/typing.md). teil/src/check.rs reports every independent error; the
    first one found here is always among them (the differential test checks this). The
    implementation limits (E0005, E0103, E0104, E0309, E0310) are not typing premises and are
    not modelled. *)

From Coq Require Import String List Arith Lia Bool.
From TeIL Require Import Lists Syntax.
Import ListNotations.

Inductive code :=
| E0101 | E0102 | E0201 | E0202
| E0301 | E0302 | E0303 | E0304 | E0305 | E0306 | E0307 | E0308.

(** [Err r c]: the rule [r] (its name in spec/typing.md) and the diagnostic code [c] of the
    first premise found violated. *)
Inductive result (A : Type) := Ok (a : A) | Err (r : string) (c : code).
Arguments Ok {A}. Arguments Err {A}.

Definition shape_eqb (a b : shape) : bool := if list_eq_dec Nat.eq_dec a b then true else false.

Lemma shape_eqb_eq a b : shape_eqb a b = true <-> a = b.
Proof. unfold shape_eqb. destruct (list_eq_dec Nat.eq_dec a b); split; congruence. Qed.

Definition is_scalar (t : shape) : bool := match t with [] => true | _ => false end.

(** [1 <= i <= rank(t)]. *)
Definition pos_ok (i : nat) (t : shape) : bool := (1 <=? i) && (i <=? length t).

Fixpoint infer (G : ctx) (e : expr) : result shape :=
  match e with
  | EVar x => match lookup G x with Some t => Ok t | None => Err "T-Var" E0301 end
  | ELit _ => Ok []
  | EParen e => infer G e
  | EBin o e0 e1 =>
      match infer G e0 with
      | Err r c => Err r c
      | Ok t0 =>
          match infer G e1 with
          | Err r c => Err r c
          | Ok t1 =>
              match o with
              | Mul => if is_scalar t0 then Ok t1
                       else if shape_eqb t0 t1 then Ok t0 else Err "T-Mul" E0302
              | Div => if is_scalar t1 then Ok t0
                       else if shape_eqb t0 t1 then Ok t0 else Err "T-Elem" E0302
              | Add => if shape_eqb t0 t1 then Ok t0 else Err "T-Add" E0302
              | Sub => if shape_eqb t0 t1 then Ok t0 else Err "T-Elem" E0302
              end
          end
      end
  | EProd e0 e1 =>
      match infer G e0 with
      | Err r c => Err r c
      | Ok t0 => match infer G e1 with Err r c => Err r c | Ok t1 => Ok (t0 ++ t1) end
      end
  | ERed _ i e =>
      match infer G e with
      | Err r c => Err r c
      | Ok t => if pos_ok i t then Ok (del (i - 1) t) else Err "T-Red" E0303
      end
  | ETransp i j e =>
      match infer G e with
      | Err r c => Err r c
      | Ok t => if pos_ok i t && pos_ok j t then Ok (swap (i - 1) (j - 1) t) else Err "T-Transp" E0303
      end
  | EDiag i j e =>
      match infer G e with
      | Err r c => Err r c
      | Ok t =>
          if pos_ok i t && pos_ok j t then
            if i =? j then Err "T-Diag" E0304
            else if nth (i - 1) t 0 =? nth (j - 1) t 0 then Ok (del (hi i j - 1) t)
            else Err "T-Diag" E0305
          else Err "T-Diag" E0303
      end
  | EContr i j e =>
      match infer G e with
      | Err r c => Err r c
      | Ok t =>
          if pos_ok i t && pos_ok j t then
            if i =? j then Err "T-Contr" E0304
            else if nth (i - 1) t 0 =? nth (j - 1) t 0
                 then Ok (del (lo i j - 1) (del (hi i j - 1) t))
            else Err "T-Contr" E0305
          else Err "T-Contr" E0303
      end
  | EExpa i n e =>
      match infer G e with
      | Err r c => Err r c
      | Ok t =>
          if (1 <=? i) && (i <=? length t + 1) then
            if 1 <=? n then Ok (ins (i - 1) n t) else Err "T-Expa" E0308
          else Err "T-Expa" E0307
      end
  | EProj i m e =>
      match infer G e with
      | Err r c => Err r c
      | Ok t =>
          if pos_ok i t then
            if (1 <=? m) && (m <=? nth (i - 1) t 0) then Ok (del (i - 1) t) else Err "T-Proj" E0306
          else Err "T-Proj" E0303
      end
  end.

(** OK-Stmt: the right-hand side first, then the target. [Ok t]: the statement is well
    formed and its right-hand side has type [t]. *)
Definition check_stmt (G : ctx) (s : stmt) : result shape :=
  match infer G (value s) with
  | Err r c => Err r c
  | Ok t =>
      match lookup G (target s) with
      | None => Err "OK-Stmt" E0201
      | Some u => if shape_eqb t u then Ok t else Err "OK-Stmt" E0202
      end
  end.

(** S-Var, declaration by declaration. *)
Fixpoint check_decls (G : ctx) (ds : list decl) : result ctx :=
  match ds with
  | [] => Ok G
  | d :: ds =>
      match lookup G (dname d) with
      | Some _ => Err "S-Var" E0101
      | None =>
          if forallb (fun n => 1 <=? n) (dshape d)
          then check_decls ((dname d, dshape d) :: G) ds
          else Err "S-Var" E0102
      end
  end.

(** OK-Prog: the declarations' first error, or each statement's type or first error. *)
Definition check_prog (p : program) : result (list (result shape)) :=
  match check_decls [] (decls p) with
  | Err r c => Err r c
  | Ok G => Ok (map (check_stmt G) (stmts p))
  end.

Definition is_ok {A} (r : result A) : bool := match r with Ok _ => true | Err _ _ => false end.

Definition accepts (p : program) : bool :=
  match check_prog p with Ok rs => forallb is_ok rs | Err _ _ => false end.

(** ** Soundness and completeness *)

Ltac inv_ok :=
  repeat match goal with
  | H : match ?x with _ => _ end = Ok _ |- _ => destruct x eqn:?; try discriminate
  | H : Ok _ = Ok _ |- _ => injection H as H; subst
  | H : (_ && _) = true |- _ => apply andb_prop in H as [? ?]
  | H : (_ <=? _) = true |- _ => apply Nat.leb_le in H
  | H : (_ =? _) = false |- _ => apply Nat.eqb_neq in H
  | H : (_ =? _) = true |- _ => apply Nat.eqb_eq in H
  | H : shape_eqb _ _ = true |- _ => apply shape_eqb_eq in H; subst
  | H : is_scalar ?s = true |- _ => destruct s; [clear H | discriminate H]
  | H : pos_ok _ _ = true |- _ => unfold pos_ok in H
  | IH : forall t, Ok ?a = Ok t -> _ |- _ => specialize (IH a eq_refl)
  end.

Theorem infer_sound G e t : infer G e = Ok t -> G ⊢ e ∈ t.
Proof.
  revert t; induction e; intros t H; cbn -[Nat.leb Nat.eqb] in H; inv_ok.
  all: first
    [ apply T_Var; assumption
    | apply T_SMul; assumption | apply T_SDiv; assumption
    | apply T_Add; assumption | apply T_Mul; assumption
    | apply T_Elem; [tauto|assumption|assumption]
    | econstructor; eauto; lia ].
Qed.

Lemma shape_eqb_refl t : shape_eqb t t = true.
Proof. now apply shape_eqb_eq. Qed.

Ltac solve_bools :=
  repeat (first
    [ rewrite (proj2 (Nat.leb_le _ _)) by lia
    | match goal with
      | H : ?a <> ?b |- context [?a =? ?b] => rewrite (proj2 (Nat.eqb_neq a b) H)
      | H : ?x = ?y |- context [?x =? ?y] => rewrite H, Nat.eqb_refl
      end
    | rewrite shape_eqb_refl ]; cbn -[Nat.leb Nat.eqb]).

Theorem infer_complete G e t : G ⊢ e ∈ t -> infer G e = Ok t.
Proof.
  induction 1; cbn -[Nat.leb Nat.eqb];
    repeat match goal with
      | H : infer _ _ = Ok _ |- _ => rewrite H; clear H
      | H : lookup _ _ = Some _ |- _ => rewrite H; clear H
      end;
    cbn -[Nat.leb Nat.eqb]; unfold pos_ok; solve_bools;
    repeat match goal with
      | H : _ \/ _ |- _ => destruct H as [-> | ->]
      | |- context [is_scalar ?t] => destruct (is_scalar t)
      end; cbn -[Nat.leb Nat.eqb]; solve_bools; auto.
Qed.

Corollary infer_correct G e t : infer G e = Ok t <-> G ⊢ e ∈ t.
Proof. split; [apply infer_sound|apply infer_complete]. Qed.

(** A reported error means that no rule types the expression. *)
Corollary infer_err G e r c : infer G e = Err r c -> forall t, ~ G ⊢ e ∈ t.
Proof. intros H t Ht. apply infer_complete in Ht. congruence. Qed.

Theorem check_stmt_correct G s t :
  check_stmt G s = Ok t <-> stmt_ok G s /\ G ⊢ value s ∈ t.
Proof.
  destruct s as [x e]. unfold check_stmt; simpl. split.
  - intros H. inv_ok. apply infer_sound in Heqr. split; auto. econstructor; eauto.
  - intros [Hs He]. inversion Hs as [? ? u Hx Hu]; subst.
    pose proof (has_type_det _ _ _ _ He Hu); subst.
    apply infer_complete in He. rewrite He, Hx, shape_eqb_refl. reflexivity.
Qed.

Theorem check_decls_correct G ds G' : check_decls G ds = Ok G' <-> decls_ok G ds G'.
Proof.
  split.
  - revert G; induction ds as [|[q x t] ds IH]; intros G H; cbn -[Nat.leb] in H.
    + injection H as <-. constructor.
    + destruct (lookup G x) eqn:Hx; [discriminate|].
      destruct (forallb (fun n => 1 <=? n) t) eqn:Ht; [|discriminate].
      constructor; auto. unfold positive. apply Forall_forall. intros n Hn.
      rewrite forallb_forall in Ht. apply Nat.leb_le; auto.
  - induction 1 as [G|G q x t ds G' Hx Ht Hds IH]; cbn -[Nat.leb]; auto.
    rewrite Hx.
    replace (forallb (fun n => 1 <=? n) t) with true; auto.
    symmetry. apply forallb_forall. intros n Hn. apply Nat.leb_le.
    unfold positive in Ht. rewrite Forall_forall in Ht. auto.
Qed.

Lemma forallb_is_ok_map G ss :
  forallb is_ok (map (check_stmt G) ss) = true <-> stmts_ok G ss.
Proof.
  induction ss as [|s ss IH]; simpl; split; intros H.
  - constructor.
  - reflexivity.
  - apply andb_prop in H as [H1 H2]. constructor; [|now apply IH].
    destruct (check_stmt G s) eqn:E; [|discriminate]. now apply check_stmt_correct in E.
  - inversion H as [|? ? Hs Hss]; subst. apply andb_true_intro; split; [|now apply IH].
    inversion Hs as [x e t Hx He]; subst.
    assert (check_stmt G (Stmt x e) = Ok t) as -> by (apply check_stmt_correct; auto).
    reflexivity.
Qed.

(** The checker accepts exactly the well-formed programs (OK-Prog). *)
Theorem accepts_correct p : accepts p = true <-> exists G, prog_ok p G.
Proof.
  destruct p as [ds ss]. unfold accepts, check_prog; simpl. split.
  - destruct (check_decls [] ds) as [G|c] eqn:E; [|discriminate].
    intros H. apply forallb_is_ok_map in H. apply check_decls_correct in E.
    exists G. constructor; auto.
  - intros [G HG]. inversion HG as [? ? ? Hds Hss]; subst.
    apply check_decls_correct in Hds. rewrite Hds. now apply forallb_is_ok_map.
Qed.

(** The shapes it returns: for an accepted declaration list, each statement's result is
    [Ok t] exactly when the statement is well formed with a right-hand side of type [t]. *)
Theorem check_prog_shapes p G rs :
  check_prog p = Ok rs -> decls_ok [] (decls p) G ->
  rs = map (check_stmt G) (stmts p) /\
  (forall s t, check_stmt G s = Ok t <-> stmt_ok G s /\ G ⊢ value s ∈ t).
Proof.
  intros H Hd. unfold check_prog in H. apply check_decls_correct in Hd. rewrite Hd in H.
  injection H as <-. split; auto. apply check_stmt_correct.
Qed.

(** A declaration error means that no context is formed. *)
Theorem check_decls_err ds r c : check_decls [] ds = Err r c -> forall G, ~ decls_ok [] ds G.
Proof. intros H G HG. apply check_decls_correct in HG. congruence. Qed.
