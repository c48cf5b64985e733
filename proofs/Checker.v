(** * The checker: an executable function for the typing rules, sound and complete.

    [infer] returns the shape and the element type of an expression ([None]: flexible, of
    literals alone, see Syntax.v) or the rule and diagnostic code of the first premise it
    finds violated: the operands first, left to right; then, for the node itself, its shape
    premises in the order of the tables of spec/typing.md, then its element-type premise
    (E0311, E0312, or T-Lit's E0313 for a flexible operand that the other operand, or a
    conversion, settles to [f32]). teil/src/check.rs checks the shape rules and the
    element-type rules in two independent passes and reports every independent error of both;
    the first one found here is always among them (the differential test checks this): an
    error found here at a node whose operands check is found there too, by either pass. The
    implementation limits (E0005, E0103, E0104, E0309, E0310) are not typing premises and are
    not modelled. *)

From Coq Require Import String List Arith Lia Bool.
From TeIL Require Import Lists Syntax.
Import ListNotations.

Inductive code :=
| E0101 | E0102 | E0201 | E0202 | E0203
| E0301 | E0302 | E0303 | E0304 | E0305 | E0306 | E0307 | E0308
| E0311 | E0312 | E0313.

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

(** The element type of an expression as the checker knows it: [Some τ], or [None] for a
    flexible one, whose context chooses ([Elem::Known], [Elem::Flexible] in check.rs). *)
Definition ekind := option etype.

(** The operands' element types of a node with two operands [e0], [e1] (of rule [r]) and
    shape [t]: one element type, a flexible operand taking the other's (settled: each of its
    literals must fit it), two flexible operands staying flexible (check.rs, [same_elem]). *)
Definition join (r : string) (t : shape) (e0 e1 : expr) (k0 k1 : ekind)
  : result (shape * ekind) :=
  match k0, k1 with
  | Some a, Some b => if etype_eqb a b then Ok (t, Some a) else Err r E0311
  | Some a, None => if lits_fit a e1 then Ok (t, Some a) else Err "T-Lit" E0313
  | None, Some b => if lits_fit b e0 then Ok (t, Some b) else Err "T-Lit" E0313
  | None, None => Ok (t, None)
  end.

(** T-Conv: the operand has the other element type; a flexible one is settled to it. *)
Definition conv_elem (τ : etype) (t : shape) (e : expr) (k : ekind) : result (shape * ekind) :=
  match k with
  | Some b => if etype_eqb b τ then Err "T-Conv" E0312 else Ok (t, Some τ)
  | None => if lits_fit (other τ) e then Ok (t, Some τ) else Err "T-Lit" E0313
  end.

(** Whether what the checker knows of [e]'s element type, [k], admits [τ]: [τ] itself, or
    for a flexible [e], any element type all of its literals fit. *)
Definition admits (k : ekind) (τ : etype) (e : expr) : bool :=
  match k with Some a => etype_eqb a τ | None => lits_fit τ e end.

Fixpoint infer (G : ctx) (e : expr) : result (shape * ekind) :=
  match e with
  | EVar x => match lookup G x with Some (t, τ) => Ok (t, Some τ) | None => Err "T-Var" E0301 end
  | ELit _ _ => Ok ([], None)
  | EParen e => infer G e
  | EBin o e0 e1 =>
      match infer G e0 with
      | Err r c => Err r c
      | Ok (t0, k0) =>
          match infer G e1 with
          | Err r c => Err r c
          | Ok (t1, k1) =>
              match o with
              | Mul => if is_scalar t0 then join "T-Mul" t1 e0 e1 k0 k1
                       else if shape_eqb t0 t1 then join "T-Mul" t0 e0 e1 k0 k1
                       else Err "T-Mul" E0302
              | Div => if is_scalar t1 then join "T-Elem" t0 e0 e1 k0 k1
                       else if shape_eqb t0 t1 then join "T-Elem" t0 e0 e1 k0 k1
                       else Err "T-Elem" E0302
              | Add => if shape_eqb t0 t1 then join "T-Add" t0 e0 e1 k0 k1 else Err "T-Add" E0302
              | Sub => if shape_eqb t0 t1 then join "T-Elem" t0 e0 e1 k0 k1 else Err "T-Elem" E0302
              end
          end
      end
  | EProd e0 e1 =>
      match infer G e0 with
      | Err r c => Err r c
      | Ok (t0, k0) =>
          match infer G e1 with
          | Err r c => Err r c
          | Ok (t1, k1) => join "T-Prod" (t0 ++ t1) e0 e1 k0 k1
          end
      end
  | ERed _ i e =>
      match infer G e with
      | Err r c => Err r c
      | Ok (t, k) => if pos_ok i t then Ok (del (i - 1) t, k) else Err "T-Red" E0303
      end
  | ETransp i j e =>
      match infer G e with
      | Err r c => Err r c
      | Ok (t, k) =>
          if pos_ok i t && pos_ok j t then Ok (swap (i - 1) (j - 1) t, k) else Err "T-Transp" E0303
      end
  | EDiag i j e =>
      match infer G e with
      | Err r c => Err r c
      | Ok (t, k) =>
          if pos_ok i t && pos_ok j t then
            if i =? j then Err "T-Diag" E0304
            else if nth (i - 1) t 0 =? nth (j - 1) t 0 then Ok (del (hi i j - 1) t, k)
            else Err "T-Diag" E0305
          else Err "T-Diag" E0303
      end
  | EContr i j e =>
      match infer G e with
      | Err r c => Err r c
      | Ok (t, k) =>
          if pos_ok i t && pos_ok j t then
            if i =? j then Err "T-Contr" E0304
            else if nth (i - 1) t 0 =? nth (j - 1) t 0
                 then Ok (del (lo i j - 1) (del (hi i j - 1) t), k)
            else Err "T-Contr" E0305
          else Err "T-Contr" E0303
      end
  | EExpa i n e =>
      match infer G e with
      | Err r c => Err r c
      | Ok (t, k) =>
          if (1 <=? i) && (i <=? length t + 1) then
            if 1 <=? n then Ok (ins (i - 1) n t, k) else Err "T-Expa" E0308
          else Err "T-Expa" E0307
      end
  | EProj i m e =>
      match infer G e with
      | Err r c => Err r c
      | Ok (t, k) =>
          if pos_ok i t then
            if (1 <=? m) && (m <=? nth (i - 1) t 0) then Ok (del (i - 1) t, k)
            else Err "T-Proj" E0306
          else Err "T-Proj" E0303
      end
  | EFunc _ e => infer G e
  | EFunc2 _ e0 e1 =>
      match infer G e0 with
      | Err r c => Err r c
      | Ok (t0, k0) =>
          match infer G e1 with
          | Err r c => Err r c
          | Ok (t1, k1) =>
              if shape_eqb t0 t1 then join "T-Func2" t0 e0 e1 k0 k1 else Err "T-Func2" E0302
          end
      end
  | EConv τ e =>
      match infer G e with
      | Err r c => Err r c
      | Ok (t, k) => conv_elem τ t e k
      end
  end.

(** OK-Stmt: the right-hand side first, then the target: its shape (E0201, E0202), then its
    element type (E0203; a flexible right-hand side is settled to the target's, E0313).
    [Ok (t, τ)]: the statement is well formed and its right-hand side has shape [t] at the
    target's element type [τ]. *)
Definition check_stmt (G : ctx) (s : stmt) : result (shape * etype) :=
  match infer G (value s) with
  | Err r c => Err r c
  | Ok (t, k) =>
      match lookup G (target s) with
      | None => Err "OK-Stmt" E0201
      | Some (u, τ) =>
          if shape_eqb t u then
            match k with
            | Some a => if etype_eqb a τ then Ok (t, τ) else Err "OK-Stmt" E0203
            | None => if lits_fit τ (value s) then Ok (t, τ) else Err "T-Lit" E0313
            end
          else Err "OK-Stmt" E0202
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
          then check_decls ((dname d, (dshape d, delem d)) :: G) ds
          else Err "S-Var" E0102
      end
  end.

(** OK-Prog: the declarations' first error, or each statement's type or first error. *)
Definition check_prog (p : program) : result (list (result (shape * etype))) :=
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
  | H : Err _ _ = Ok _ |- _ => discriminate H
  | H : Ok _ = Ok _ |- _ => injection H as H; subst
  | H : (_ && _) = true |- _ => apply andb_prop in H as [? ?]
  | H : (_ <=? _) = true |- _ => apply Nat.leb_le in H
  | H : (_ =? _) = false |- _ => apply Nat.eqb_neq in H
  | H : (_ =? _) = true |- _ => apply Nat.eqb_eq in H
  | H : shape_eqb _ _ = true |- _ => apply shape_eqb_eq in H; subst
  | H : etype_eqb _ _ = true |- _ => apply etype_eqb_eq in H; subst
  | H : is_scalar ?s = true |- _ => destruct s; [clear H | discriminate H]
  | H : pos_ok _ _ = true |- _ => unfold pos_ok in H
  end.

(** [join]'s answer admits [τ] only if each operand's does. *)
Lemma join_sound r t e0 e1 k0 k1 t' k τ :
  join r t e0 e1 k0 k1 = Ok (t', k) ->
  match k with Some a => etype_eqb a τ | None => lits_fit τ e0 && lits_fit τ e1 end = true ->
  t' = t /\ admits k0 τ e0 = true /\ admits k1 τ e1 = true.
Proof.
  unfold join, admits. intros H Ha.
  destruct k0 as [a|], k1 as [b|]; inv_ok; simpl in *; inv_ok; auto using etype_eqb_refl.
Qed.

Lemma join_complete r t e0 e1 k0 k1 τ :
  admits k0 τ e0 = true -> admits k1 τ e1 = true ->
  exists k, join r t e0 e1 k0 k1 = Ok (t, k) /\
    match k with Some a => etype_eqb a τ | None => lits_fit τ e0 && lits_fit τ e1 end = true.
Proof.
  unfold join, admits. intros H0 H1.
  destruct k0 as [a|], k1 as [b|]; inv_ok;
    rewrite ?etype_eqb_refl, ?H0, ?H1; eexists; split; eauto using etype_eqb_refl;
    simpl; now rewrite ?H0, ?H1.
Qed.

Lemma conv_sound τ t e k t' k' τ0 :
  conv_elem τ t e k = Ok (t', k') -> admits k' τ0 (EConv τ e) = true ->
  t' = t /\ τ0 = τ /\ admits k (other τ) e = true.
Proof.
  unfold conv_elem, admits. intros H Ha. destruct k as [b|].
  - destruct (etype_eqb b τ) eqn:E; inv_ok; simpl in *; inv_ok; repeat split; auto.
    apply etype_eqb_eq, neq_other. intros ->. now rewrite etype_eqb_refl in E.
  - inv_ok; simpl in *; inv_ok; repeat split; auto.
Qed.

Lemma conv_complete τ t e k :
  admits k (other τ) e = true -> conv_elem τ t e k = Ok (t, Some τ).
Proof.
  unfold conv_elem, admits. intros H. destruct k as [b|]; [|now rewrite H].
  apply etype_eqb_eq in H. subst. destruct τ; reflexivity.
Qed.

(** What [admits] says of an expression whose element type is its operand's. *)
Ltac admits_unary :=
  match goal with
  | H : admits ?k ?τ (_ ?e) = true |- _ =>
      change (admits k τ e = true) in H
  | H : admits ?k ?τ (_ _ ?e) = true |- _ =>
      change (admits k τ e = true) in H
  | H : admits ?k ?τ (_ _ _ ?e) = true |- _ =>
      change (admits k τ e = true) in H
  end.

(** The checker is sound: an answer [Ok (t, k)] gives a derivation at every element type [k]
    admits (its one element type, or, for a flexible expression, every one its literals fit). *)
Theorem infer_sound G e t k τ : infer G e = Ok (t, k) -> admits k τ e = true -> G ⊢ e ∈ t of τ.
Proof.
  revert t k τ; induction e; intros ? ? ? H Ha; cbn -[Nat.leb Nat.eqb join conv_elem] in H;
    inv_ok.
  (* EVar *)
  1: unfold admits in Ha; inv_ok; now apply T_Var.
  (* ELit *)
  1: now apply T_Lit.
  (* The others: [join]'s operands, then the rule. *)
  all: try (eapply join_sound in H as [-> [H0 H1]]; [|exact Ha]).
  all: try solve [apply T_SMul; eauto].
  all: try solve [apply T_SDiv; eauto].
  all: try solve [apply T_Add; eauto].
  all: try solve [apply T_Mul; eauto].
  all: try solve [apply T_Elem; eauto].
  all: try solve [apply T_Prod; eauto].
  all: try solve [apply T_Func2; eauto].
  all: try solve [apply T_Func; eauto].
  all: try (admits_unary; econstructor; eauto; lia).
  (* EConv *)
  destruct (conv_sound _ _ _ _ _ _ _ H Ha) as [-> [-> H']]. apply T_Conv. eauto.
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
    | rewrite shape_eqb_refl ]; cbn -[Nat.leb Nat.eqb join conv_elem]).

(** The checker is complete: a derivation at [τ] means an answer [Ok (t, k)] that admits [τ]. *)
Theorem infer_complete G e t τ :
  G ⊢ e ∈ t of τ -> exists k, infer G e = Ok (t, k) /\ admits k τ e = true.
Proof.
  induction 1; cbn -[Nat.leb Nat.eqb join conv_elem];
    repeat match goal with
      | H : exists k, infer _ _ = Ok _ /\ _ |- _ => destruct H as [? [H ?]]; rewrite H; clear H
      end;
    cbn -[Nat.leb Nat.eqb join conv_elem].
  (* T_Var *)
  1: rewrite H; exists (Some τ); split; [reflexivity|apply etype_eqb_refl].
  (* T_Paren *)
  1: eauto.
  (* T_Lit *)
  1: exists None; auto.
  (* The element-wise rules, [prod] and [max]/[min]: the shape, then [join]. *)
  all: try solve [unfold pos_ok; solve_bools;
    repeat match goal with
    | H : _ \/ _ |- _ => destruct H as [-> | ->]
    | |- context [is_scalar ?t] => destruct (is_scalar t)
    end; cbn -[Nat.leb Nat.eqb join conv_elem]; solve_bools;
    match goal with
    | |- context [join ?r ?t ?e0 ?e1 ?k0 ?k1] =>
        match goal with H0 : admits k0 ?τ e0 = true, H1 : admits k1 ?τ e1 = true |- _ =>
          destruct (join_complete r t e0 e1 k0 k1 τ H0 H1) as [k [-> Hk]];
          exists k; split; [reflexivity|exact Hk]
        end
    end].
  (* The rules with positions, and T-Func: the operand's element type. *)
  all: try (unfold pos_ok; solve_bools; eexists; split; [reflexivity|assumption]).
  (* T-Conv *)
  exists (Some τ). rewrite conv_complete by assumption. split; [reflexivity|apply etype_eqb_refl].
Qed.

Corollary infer_correct G e t τ :
  (exists k, infer G e = Ok (t, k) /\ admits k τ e = true) <-> G ⊢ e ∈ t of τ.
Proof.
  split; [intros [k [H Ha]]; eapply infer_sound; eauto|apply infer_complete].
Qed.

(** A reported error means that no rule types the expression, at any element type. *)
Corollary infer_err G e r c : infer G e = Err r c -> forall t τ, ~ G ⊢ e ∈ t of τ.
Proof.
  intros H t τ Ht. apply infer_complete in Ht as [k [Ht _]]. congruence.
Qed.

Theorem check_stmt_correct G s t τ :
  check_stmt G s = Ok (t, τ) <-> lookup G (target s) = Some (t, τ) /\ G ⊢ value s ∈ t of τ.
Proof.
  destruct s as [x e]. unfold check_stmt; simpl. split.
  - intros H. inv_ok; split; auto; eapply infer_sound; eauto; simpl; auto using etype_eqb_refl.
  - intros [Hx He]. apply infer_complete in He as [k [He Ha]]. rewrite He, Hx, shape_eqb_refl.
    destruct k as [a|]; simpl in Ha; [apply etype_eqb_eq in Ha; subst; now rewrite etype_eqb_refl|].
    now rewrite Ha.
Qed.

(** A statement is well formed exactly when the checker answers [Ok]. *)
Corollary check_stmt_ok G s : is_ok (check_stmt G s) = true <-> stmt_ok G s.
Proof.
  split.
  - destruct (check_stmt G s) as [[t τ]|] eqn:E; [|discriminate]. intros _.
    apply check_stmt_correct in E as [Hx He]. destruct s. econstructor; eauto.
  - intros [x e t τ Hx He].
    assert (check_stmt G (Stmt x e) = Ok (t, τ)) as -> by (apply check_stmt_correct; auto).
    reflexivity.
Qed.

Theorem check_decls_correct G ds G' : check_decls G ds = Ok G' <-> decls_ok G ds G'.
Proof.
  split.
  - revert G; induction ds as [|[q x t τ] ds IH]; intros G H; cbn -[Nat.leb] in H.
    + injection H as <-. constructor.
    + destruct (lookup G x) eqn:Hx; [discriminate|].
      destruct (forallb (fun n => 1 <=? n) t) eqn:Ht; [|discriminate].
      constructor; auto. unfold positive. apply Forall_forall. intros n Hn.
      rewrite forallb_forall in Ht. apply Nat.leb_le; auto.
  - induction 1 as [G|G q x t τ ds G' Hx Ht Hds IH]; cbn -[Nat.leb]; auto.
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
    now apply check_stmt_ok.
  - inversion H as [|? ? Hs Hss]; subst. apply andb_true_intro; split; [|now apply IH].
    now apply check_stmt_ok.
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

(** The types it returns: for an accepted declaration list, each statement's result is
    [Ok (t, τ)] exactly when its target has shape [t] and element type [τ] and its right-hand
    side has them too, that is, when the statement is well formed (OK-Stmt) with a target of
    that type. *)
Theorem check_prog_shapes p G rs :
  check_prog p = Ok rs -> decls_ok [] (decls p) G ->
  rs = map (check_stmt G) (stmts p) /\
  (forall s t τ, check_stmt G s = Ok (t, τ) <->
     lookup G (target s) = Some (t, τ) /\ G ⊢ value s ∈ t of τ) /\
  (forall s, is_ok (check_stmt G s) = true <-> stmt_ok G s).
Proof.
  intros H Hd. unfold check_prog in H. apply check_decls_correct in Hd. rewrite Hd in H.
  injection H as <-. split; auto. split; [apply check_stmt_correct|apply check_stmt_ok].
Qed.

(** A declaration error means that no context is formed. *)
Theorem check_decls_err ds r c : check_decls [] ds = Err r c -> forall G, ~ decls_ok [] ds G.
Proof. intros H G HG. apply check_decls_correct in HG. congruence. Qed.
