(** * Syntax and typing: the AST of teil/src/ast.rs and the rules of spec/typing.md.

    One AST for both surface syntaxes: [add e0 e1] and [e0 + e1] are both [EBin Add e0 e1],
    [e .[i j]] is [EContr i j e], and so on. Positions ([i], [j] of [transp], [red], ...) are
    kept 1-based, exactly as written. A literal keeps its decimal text: its value is the
    domain's business (spec/semantics.md, [S-Lit]); and whether that decimal rounds to a finite
    binary32 number, which the parser computes and the AST carries (teil/src/ast_json.rs,
    ["f32_finite"]): T-Lit's premise in an [f32] context.

    Element types: every variable has a shape and an element type, [f64] or [f32]
    (spec/typing.md, "Element types"). Typing is the judgement [Γ ⊢ e ∈ t of τ]: [e] has shape
    [t] at element type [τ]. A literal has type [[]] at every element type it fits (T-Lit), so
    an expression built of literals alone ([flexible]) has its shape at several element types:
    its context chooses one (teil/src/check.rs, [settle]). *)

From Coq Require Import String List Arith Lia Bool.
From TeIL Require Import Lists.
Import ListNotations.

Definition shape := list nat.
Definition name := string.

Inductive binop := Add | Sub | Mul | Div.
(** The element types: IEEE 754 binary64 and binary32. *)
Inductive etype := F64 | F32.
(** The functions of one operand ([exp e], ...; T-Func) and of two ([max e0 e1]; T-Func2). *)
Inductive func := FExp | FLog | FSqrt | FTanh | FErf | FAbs.
Inductive func2 := FMax | FMin.
Inductive redop := RSum | RProd | RMax | RMin.
Inductive qualifier := Input | Output | InOut.

Inductive expr :=
| EVar (x : name)
| ELit (c : string) (f32_finite : bool)
| EParen (e : expr)
| EBin (o : binop) (e0 e1 : expr)
| EProd (e0 e1 : expr)
| ERed (o : redop) (i : nat) (e : expr)
| ETransp (i j : nat) (e : expr)
| EDiag (i j : nat) (e : expr)
| EContr (i j : nat) (e : expr)
| EExpa (i n : nat) (e : expr)
| EProj (i m : nat) (e : expr)
| EFunc (f : func) (e : expr)
| EFunc2 (g : func2) (e0 e1 : expr)
(** [f32 e], [f64 e]: the conversion to [τ], of an operand of the other element type. *)
| EConv (τ : etype) (e : expr).

(** [alloc x : τ[n_1, ..., n_k]], optionally qualified ([τ] is [f64] unless written). *)
Record decl := Decl { dqual : option qualifier; dname : name; dshape : shape; delem : etype }.
(** [x = e]. *)
Record stmt := Stmt { target : name; value : expr }.
Record program := Program { decls : list decl; stmts : list stmt }.

(** The context [Γ]: the most recent declaration first; each variable's shape and element
    type. *)
Definition ctx := list (name * (shape * etype)).

Fixpoint lookup (G : ctx) (x : name) : option (shape * etype) :=
  match G with
  | [] => None
  | (y, t) :: G => if String.eqb x y then Some t else lookup G x
  end.

(** The two positions of [diag] and [contr]: [l = min(i, j)], [h = max(i, j)]. *)
Definition lo (i j : nat) := Nat.min i j.
Definition hi (i j : nat) := Nat.max i j.

(** The element type a conversion to [τ] converts from. *)
Definition other (τ : etype) : etype := match τ with F64 => F32 | F32 => F64 end.

Definition etype_eqb (a b : etype) : bool :=
  match a, b with F64, F64 | F32, F32 => true | _, _ => false end.

Lemma etype_eqb_eq a b : etype_eqb a b = true <-> a = b.
Proof. destruct a, b; simpl; split; congruence. Qed.

Lemma etype_eqb_refl a : etype_eqb a a = true.
Proof. now destruct a. Qed.

Lemma other_neq τ : other τ <> τ.
Proof. destruct τ; discriminate. Qed.

(** Two element types: one that is not [τ] is [other τ]. *)
Lemma neq_other a τ : a <> τ -> a = other τ.
Proof. destruct a, τ; simpl; congruence. Qed.

(** T-Lit's premise: a literal fits [f64] always (its binary64 value is finite: the parser
    rejects any other, E0004) and [f32] when its decimal rounds to a finite binary32 value
    (E0313). *)
Definition lit_fits (f32_finite : bool) (τ : etype) : bool :=
  match τ with F64 => true | F32 => f32_finite end.

Reserved Notation "G ⊢ e ∈ t 'of' τ" (at level 70, t at next level).

(** [Γ ⊢ e : t of τ], one constructor per rule of spec/typing.md, "Expressions": the shape
    premises as before, and every rule's element-type premise (E0311, E0312, E0313 and
    OK-Stmt's E0203): operands of one element type, the result of that type. *)
Inductive has_type (G : ctx) : expr -> shape -> etype -> Prop :=
| T_Var x t τ :
    lookup G x = Some (t, τ) ->                                  (* E0301 *)
    G ⊢ EVar x ∈ t of τ
| T_Paren e t τ :
    G ⊢ e ∈ t of τ ->
    G ⊢ EParen e ∈ t of τ
(** A literal takes the element type its context needs, if it fits it. *)
| T_Lit c fin τ :
    lit_fits fin τ = true ->                                     (* E0313 *)
    G ⊢ ELit c fin ∈ [] of τ
| T_Add e0 e1 t τ :
    G ⊢ e0 ∈ t of τ -> G ⊢ e1 ∈ t of τ ->                        (* E0302, E0311 *)
    G ⊢ EBin Add e0 e1 ∈ t of τ
| T_Mul e0 e1 t τ :
    G ⊢ e0 ∈ t of τ -> G ⊢ e1 ∈ t of τ ->                        (* E0302, E0311 *)
    G ⊢ EBin Mul e0 e1 ∈ t of τ
| T_Elem o e0 e1 t τ :
    o = Sub \/ o = Div ->
    G ⊢ e0 ∈ t of τ -> G ⊢ e1 ∈ t of τ ->                        (* E0302, E0311 *)
    G ⊢ EBin o e0 e1 ∈ t of τ
| T_SMul e0 e1 t τ :
    G ⊢ e0 ∈ [] of τ -> G ⊢ e1 ∈ t of τ ->                       (* E0311 *)
    G ⊢ EBin Mul e0 e1 ∈ t of τ
| T_SDiv e0 e1 t τ :
    G ⊢ e0 ∈ t of τ -> G ⊢ e1 ∈ [] of τ ->                       (* E0311 *)
    G ⊢ EBin Div e0 e1 ∈ t of τ
| T_Prod e0 e1 t0 t1 τ :
    G ⊢ e0 ∈ t0 of τ -> G ⊢ e1 ∈ t1 of τ ->                      (* E0311 *)
    G ⊢ EProd e0 e1 ∈ t0 ++ t1 of τ
| T_Red o i e t τ :
    G ⊢ e ∈ t of τ ->
    1 <= i <= length t ->                                        (* E0303 *)
    G ⊢ ERed o i e ∈ del (i - 1) t of τ
| T_Transp i j e t τ :
    G ⊢ e ∈ t of τ ->
    1 <= i <= length t -> 1 <= j <= length t ->                  (* E0303 *)
    G ⊢ ETransp i j e ∈ swap (i - 1) (j - 1) t of τ
| T_Diag i j e t τ :
    G ⊢ e ∈ t of τ ->
    1 <= i <= length t -> 1 <= j <= length t ->                  (* E0303 *)
    i <> j ->                                                    (* E0304 *)
    nth (i - 1) t 0 = nth (j - 1) t 0 ->                         (* E0305 *)
    G ⊢ EDiag i j e ∈ del (hi i j - 1) t of τ
| T_Contr i j e t τ :
    G ⊢ e ∈ t of τ ->
    1 <= i <= length t -> 1 <= j <= length t ->                  (* E0303 *)
    i <> j ->                                                    (* E0304 *)
    nth (i - 1) t 0 = nth (j - 1) t 0 ->                         (* E0305 *)
    G ⊢ EContr i j e ∈ del (lo i j - 1) (del (hi i j - 1) t) of τ
| T_Expa i n e t τ :
    G ⊢ e ∈ t of τ ->
    1 <= i <= length t + 1 ->                                    (* E0307 *)
    1 <= n ->                                                    (* E0308 *)
    G ⊢ EExpa i n e ∈ ins (i - 1) n t of τ
| T_Proj i m e t τ :
    G ⊢ e ∈ t of τ ->
    1 <= i <= length t ->                                        (* E0303 *)
    1 <= m <= nth (i - 1) t 0 ->                                 (* E0306 *)
    G ⊢ EProj i m e ∈ del (i - 1) t of τ
(** [exp e], ...: element-wise, the operand's shape and element type. *)
| T_Func f e t τ :
    G ⊢ e ∈ t of τ ->
    G ⊢ EFunc f e ∈ t of τ
(** [max e0 e1], [min e0 e1]: typed like [+]. *)
| T_Func2 g e0 e1 t τ :
    G ⊢ e0 ∈ t of τ -> G ⊢ e1 ∈ t of τ ->                        (* E0302, E0311 *)
    G ⊢ EFunc2 g e0 e1 ∈ t of τ
(** [f32 e], [f64 e]: the operand has the other element type. *)
| T_Conv τ e t :
    G ⊢ e ∈ t of other τ ->                                      (* E0312 *)
    G ⊢ EConv τ e ∈ t of τ
where "G ⊢ e ∈ t 'of' τ" := (has_type G e t τ).

(** [Γ ⊢ x = e ok] (OK-Stmt): the right-hand side has the target's shape and element type. *)
Inductive stmt_ok (G : ctx) : stmt -> Prop :=
| OK_Stmt x e t τ :
    lookup G x = Some (t, τ) ->                                  (* E0201 *)
    G ⊢ e ∈ t of τ ->                                            (* E0202, E0203 *)
    stmt_ok G (Stmt x e).

(** [Γ ⊢ stmts ok] (OK-Seq: OK-Empty and OK-Seq). *)
Inductive stmts_ok (G : ctx) : list stmt -> Prop :=
| OK_Empty : stmts_ok G []
| OK_Seq s ss : stmt_ok G s -> stmts_ok G ss -> stmts_ok G (s :: ss).

(** [decls ⊢s Γ] (S-Var), processing declarations in order: [decls_ok G ds G'] when the
    declarations [ds], read after those that formed [G], form [G']. *)
Inductive decls_ok : ctx -> list decl -> ctx -> Prop :=
| S_Empty G : decls_ok G [] G
| S_Var G q x t τ ds G' :
    lookup G x = None ->                                         (* E0101 *)
    positive t ->                                                (* E0102 *)
    decls_ok ((x, (t, τ)) :: G) ds G' ->
    decls_ok G (Decl q x t τ :: ds) G'.

(** [decls stmts ok] (OK-Prog). *)
Inductive prog_ok : program -> ctx -> Prop :=
| OK_Prog ds ss G :
    decls_ok [] ds G -> stmts_ok G ss -> prog_ok (Program ds ss) G.

(** A context formed by declarations has positive extents. *)
Definition ctx_positive (G : ctx) := forall x t τ, lookup G x = Some (t, τ) -> positive t.

Lemma decls_ok_positive G ds G' : decls_ok G ds G' -> ctx_positive G -> ctx_positive G'.
Proof.
  induction 1; auto. intros HG. apply IHdecls_ok.
  intros y u υ Hy. simpl in Hy. destruct (String.eqb y x); [congruence|eauto].
Qed.

Lemma lo_hi i j : i <> j -> lo i j < hi i j /\
  ((lo i j = i /\ hi i j = j) \/ (lo i j = j /\ hi i j = i)).
Proof. unfold lo, hi; lia. Qed.

(** Every type a context with positive extents assigns has positive extents. *)
Lemma has_type_positive G e t τ : ctx_positive G -> G ⊢ e ∈ t of τ -> positive t.
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

(** ** Flexible expressions

    Literals, and the operations over literals alone, have no element type of their own
    ([Elem::Flexible] in teil/src/check.rs): a variable or a conversion fixes it. *)
Fixpoint flexible (e : expr) : bool :=
  match e with
  | EVar _ | EConv _ _ => false
  | ELit _ _ => true
  | EParen e | ERed _ _ e | ETransp _ _ e | EDiag _ _ e | EContr _ _ e | EExpa _ _ e
  | EProj _ _ e | EFunc _ e => flexible e
  | EBin _ e0 e1 | EProd e0 e1 | EFunc2 _ e0 e1 => flexible e0 && flexible e1
  end.

(** Every literal that takes the element type of [e] fits [τ]: the literals of [e] outside
    conversions (inside one, a literal takes the other type). *)
Fixpoint lits_fit (τ : etype) (e : expr) : bool :=
  match e with
  | EVar _ | EConv _ _ => true
  | ELit _ fin => lit_fits fin τ
  | EParen e | ERed _ _ e | ETransp _ _ e | EDiag _ _ e | EContr _ _ e | EExpa _ _ e
  | EProj _ _ e | EFunc _ e => lits_fit τ e
  | EBin _ e0 e1 | EProd e0 e1 | EFunc2 _ e0 e1 => lits_fit τ e0 && lits_fit τ e1
  end.

Lemma has_type_lits_fit G e t τ : G ⊢ e ∈ t of τ -> lits_fit τ e = true.
Proof. induction 1; simpl; rewrite ?IHhas_type1, ?IHhas_type2; auto. Qed.

(** A flexible expression has its shape at every element type its literals fit. *)
Lemma flexible_retype G e t τ τ' :
  flexible e = true -> G ⊢ e ∈ t of τ -> lits_fit τ' e = true -> G ⊢ e ∈ t of τ'.
Proof.
  intros Hf H. revert Hf. induction H; simpl; intros Hf Hl; try discriminate;
    repeat match goal with
    | H : (_ && _) = true |- _ => apply andb_prop in H as [? ?]
    end;
    (* [EBin Mul] and [EBin Div] have two rules each: the one of the derivation. *)
    first [ eapply T_SMul; now eauto | eapply T_SDiv; now eauto | econstructor; now eauto ].
Qed.

(** Typing is syntax directed (spec/typing.md): the shape is a function of the expression;
    so is the element type, unless the expression is flexible (its context chooses). *)
Lemma has_type_det G e t1 t2 τ1 τ2 :
  G ⊢ e ∈ t1 of τ1 -> G ⊢ e ∈ t2 of τ2 -> t1 = t2 /\ (flexible e = false -> τ1 = τ2).
Proof.
  intros H1; revert t2 τ2; induction H1; intros t2 τ2 Ht2; inversion Ht2; subst; simpl;
    repeat match goal with
           | H : _ \/ _ |- _ => destruct H; try discriminate
           | IH : forall t τ, ?G ⊢ ?e ∈ t of τ -> _ = t /\ _, H : ?G ⊢ ?e ∈ _ of _ |- _ =>
               apply IH in H as [? ?]; subst
           end; try (split; [congruence|]); auto; try congruence;
    try (intros Hf; apply andb_false_iff in Hf as [Hf|Hf]; auto; fail).
Qed.
