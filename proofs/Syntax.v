(** * Syntax and typing: the AST of teil/src/ast.rs and the rules of spec/typing.md.

    One AST for both surface syntaxes: [add e0 e1] and [e0 + e1] are both [EBin Add e0 e1],
    [e .[i j]] is [EContr i j e], and so on. Positions ([i], [j] of [transp], [red], ...) are
    kept 1-based, exactly as written. A literal keeps its decimal text: its value is the
    domain's business (spec/semantics.md, [S-Lit]). *)

From Coq Require Import String List Arith Lia Bool.
From TeIL Require Import Lists.
Import ListNotations.

Definition shape := list nat.
Definition name := string.

Inductive binop := Add | Sub | Mul | Div.
Inductive redop := RSum | RProd | RMax | RMin.
Inductive qualifier := Input | Output | InOut.

Inductive expr :=
| EVar (x : name)
| ELit (c : string)
| EParen (e : expr)
| EBin (o : binop) (e0 e1 : expr)
| EProd (e0 e1 : expr)
| ERed (o : redop) (i : nat) (e : expr)
| ETransp (i j : nat) (e : expr)
| EDiag (i j : nat) (e : expr)
| EContr (i j : nat) (e : expr)
| EExpa (i n : nat) (e : expr)
| EProj (i m : nat) (e : expr).

(** [alloc x : [n_1, ..., n_k]], optionally qualified. *)
Record decl := Decl { dqual : option qualifier; dname : name; dshape : shape }.
(** [x = e]. *)
Record stmt := Stmt { target : name; value : expr }.
Record program := Program { decls : list decl; stmts : list stmt }.

(** The context [Γ]: the most recent declaration first. *)
Definition ctx := list (name * shape).

Fixpoint lookup (G : ctx) (x : name) : option shape :=
  match G with
  | [] => None
  | (y, t) :: G => if String.eqb x y then Some t else lookup G x
  end.

(** The two positions of [diag] and [contr]: [l = min(i, j)], [h = max(i, j)]. *)
Definition lo (i j : nat) := Nat.min i j.
Definition hi (i j : nat) := Nat.max i j.

Reserved Notation "G ⊢ e ∈ t" (at level 70).

(** [Γ ⊢ e : t], one constructor per rule of spec/typing.md, "Expressions". *)
Inductive has_type (G : ctx) : expr -> shape -> Prop :=
| T_Var x t :
    lookup G x = Some t ->
    G ⊢ EVar x ∈ t
| T_Paren e t :
    G ⊢ e ∈ t ->
    G ⊢ EParen e ∈ t
| T_Lit c :
    G ⊢ ELit c ∈ []
| T_Add e0 e1 t :
    G ⊢ e0 ∈ t -> G ⊢ e1 ∈ t ->
    G ⊢ EBin Add e0 e1 ∈ t
| T_Mul e0 e1 t :
    G ⊢ e0 ∈ t -> G ⊢ e1 ∈ t ->
    G ⊢ EBin Mul e0 e1 ∈ t
| T_Elem o e0 e1 t :
    o = Sub \/ o = Div ->
    G ⊢ e0 ∈ t -> G ⊢ e1 ∈ t ->
    G ⊢ EBin o e0 e1 ∈ t
| T_SMul e0 e1 t :
    G ⊢ e0 ∈ [] -> G ⊢ e1 ∈ t ->
    G ⊢ EBin Mul e0 e1 ∈ t
| T_SDiv e0 e1 t :
    G ⊢ e0 ∈ t -> G ⊢ e1 ∈ [] ->
    G ⊢ EBin Div e0 e1 ∈ t
| T_Prod e0 e1 t0 t1 :
    G ⊢ e0 ∈ t0 -> G ⊢ e1 ∈ t1 ->
    G ⊢ EProd e0 e1 ∈ t0 ++ t1
| T_Red o i e t :
    G ⊢ e ∈ t ->
    1 <= i <= length t ->                                        (* E0303 *)
    G ⊢ ERed o i e ∈ del (i - 1) t
| T_Transp i j e t :
    G ⊢ e ∈ t ->
    1 <= i <= length t -> 1 <= j <= length t ->                  (* E0303 *)
    G ⊢ ETransp i j e ∈ swap (i - 1) (j - 1) t
| T_Diag i j e t :
    G ⊢ e ∈ t ->
    1 <= i <= length t -> 1 <= j <= length t ->                  (* E0303 *)
    i <> j ->                                                    (* E0304 *)
    nth (i - 1) t 0 = nth (j - 1) t 0 ->                         (* E0305 *)
    G ⊢ EDiag i j e ∈ del (hi i j - 1) t
| T_Contr i j e t :
    G ⊢ e ∈ t ->
    1 <= i <= length t -> 1 <= j <= length t ->                  (* E0303 *)
    i <> j ->                                                    (* E0304 *)
    nth (i - 1) t 0 = nth (j - 1) t 0 ->                         (* E0305 *)
    G ⊢ EContr i j e ∈ del (lo i j - 1) (del (hi i j - 1) t)
| T_Expa i n e t :
    G ⊢ e ∈ t ->
    1 <= i <= length t + 1 ->                                    (* E0307 *)
    1 <= n ->                                                    (* E0308 *)
    G ⊢ EExpa i n e ∈ ins (i - 1) n t
| T_Proj i m e t :
    G ⊢ e ∈ t ->
    1 <= i <= length t ->                                        (* E0303 *)
    1 <= m <= nth (i - 1) t 0 ->                                 (* E0306 *)
    G ⊢ EProj i m e ∈ del (i - 1) t
where "G ⊢ e ∈ t" := (has_type G e t).

(** [Γ ⊢ x = e ok] (OK-Stmt). *)
Inductive stmt_ok (G : ctx) : stmt -> Prop :=
| OK_Stmt x e t :
    lookup G x = Some t ->                                       (* E0201 *)
    G ⊢ e ∈ t ->                                                 (* E0202 *)
    stmt_ok G (Stmt x e).

(** [Γ ⊢ stmts ok] (OK-Seq: OK-Empty and OK-Seq). *)
Inductive stmts_ok (G : ctx) : list stmt -> Prop :=
| OK_Empty : stmts_ok G []
| OK_Seq s ss : stmt_ok G s -> stmts_ok G ss -> stmts_ok G (s :: ss).

(** [decls ⊢s Γ] (S-Var), processing declarations in order: [decls_ok G ds G'] when the
    declarations [ds], read after those that formed [G], form [G']. *)
Inductive decls_ok : ctx -> list decl -> ctx -> Prop :=
| S_Empty G : decls_ok G [] G
| S_Var G q x t ds G' :
    lookup G x = None ->                                         (* E0101 *)
    positive t ->                                                (* E0102 *)
    decls_ok ((x, t) :: G) ds G' ->
    decls_ok G (Decl q x t :: ds) G'.

(** [decls stmts ok] (OK-Prog). *)
Inductive prog_ok : program -> ctx -> Prop :=
| OK_Prog ds ss G :
    decls_ok [] ds G -> stmts_ok G ss -> prog_ok (Program ds ss) G.

(** A context formed by declarations has positive extents. *)
Definition ctx_positive (G : ctx) := forall x t, lookup G x = Some t -> positive t.

Lemma decls_ok_positive G ds G' : decls_ok G ds G' -> ctx_positive G -> ctx_positive G'.
Proof.
  induction 1; auto. intros HG. apply IHdecls_ok.
  intros y u Hy. simpl in Hy. destruct (String.eqb y x); [congruence|eauto].
Qed.

Lemma lo_hi i j : i <> j -> lo i j < hi i j /\
  ((lo i j = i /\ hi i j = j) \/ (lo i j = j /\ hi i j = i)).
Proof. unfold lo, hi; lia. Qed.

(** Every type a context with positive extents assigns has positive extents. *)
Lemma has_type_positive G e t : ctx_positive G -> G ⊢ e ∈ t -> positive t.
Proof.
  intros HG. induction 1; auto; try (constructor; fail).
  - eapply HG; eauto.
  - apply positive_app; auto.
  - apply positive_del; auto.
  - apply positive_swap; auto; lia.
  - apply positive_del; auto.
  - apply positive_del, positive_del; auto.
  - apply positive_ins; auto.
  - apply positive_del; auto.
Qed.

(** Typing is a function of the expression (spec/typing.md: "syntax directed"). *)
Lemma has_type_det G e t1 t2 : G ⊢ e ∈ t1 -> G ⊢ e ∈ t2 -> t1 = t2.
Proof.
  intros H1; revert t2; induction H1; intros t2 Ht2; inversion Ht2; subst;
    repeat match goal with
           | H : _ \/ _ |- _ => destruct H; try discriminate
           | IH : forall t, ?G ⊢ ?e ∈ t -> ?u = t, H : ?G ⊢ ?e ∈ _ |- _ =>
               apply IH in H; subst
           end; auto; try congruence.
Qed.
