(** * Semantics: the equations of spec/semantics.md, and type safety.

    The value domain [𝔻 = 𝔽 ∪ {•}] is [val F]: [Def x] for a number [x : F] and [Undef] for
    [•]. The numbers are abstract: [F] and its operations ([arith F]) are parameters, so
    nothing below depends on IEEE-754 rounding; spec/values.md fixes them. The operations on
    [𝔻] are those on [F] with [•] absorbing ([lift]).

    Element types: every operation computes in its element type. The arithmetic is indexed by
    it ([f_add F32] is binary32 addition: in spec/values.md the binary64 sum rounded to
    binary32, [F] holding the binary64 numbers and the binary32 ones among them), and so are
    the folds of [red⊙] and [contr], the functions ([f_fn]) and the reading of literals
    ([f_lit]); [max]/[min] of two operands ([f_max2], [f_min2]) pick one of them and round
    nothing, and the conversion to [f32] is the rounding [f_to32] while the conversion to [f64]
    is exact: the identity ([conv]). No property of any of them is assumed.

    A store maps each declared name to a tensor: a shape, an element type and a function from
    multi-indices to [𝔻]. Every read of a tensor goes through [read], which fails ([None])
    outside the index set of its shape. The value of an expression at element type [τ],
    [sem μ τ e], is its shape and a function from multi-indices to [option 𝔻]. [τ] is the
    element type the typing gives [e] (for an expression of literals alone, the one its
    context gives it, which is the one its literals are read in): it flows from the statement's
    target down to the literals, and a variable of another element type, or a conversion to
    another, has no value ([None]), so the type-safety theorems below also show that the
    element types of the typing are those of the store. Every combinator below is strict in
    [None], so a [Some] answer means that no read on the way failed. *)

From Coq Require Import String List Arith Lia Bool.
From TeIL Require Import Lists Syntax.
Import ListNotations.

Record arith (F : Type) := Arith {
  f_add : etype -> F -> F -> F;
  f_sub : etype -> F -> F -> F;
  f_mul : etype -> F -> F -> F;
  f_div : etype -> F -> F -> F;
  (** The steps of [redmax] and [redmin]. *)
  f_max : etype -> F -> F -> F;
  f_min : etype -> F -> F -> F;
  (** [exp], [log], ...: the correctly rounded function in the element type. *)
  f_fn : func -> etype -> F -> F;
  (** [max e0 e1], [min e0 e1]: IEEE 754-2019 maximum and minimum. *)
  f_max2 : F -> F -> F;
  f_min2 : F -> F -> F;
  (** [f32 e]: rounding to binary32. *)
  f_to32 : F -> F;
  (** [S-Lit]: the number of the element type nearest to the decimal text. *)
  f_lit : etype -> string -> F;
}.

Arguments f_add {F}. Arguments f_sub {F}. Arguments f_mul {F}. Arguments f_div {F}.
Arguments f_max {F}. Arguments f_min {F}. Arguments f_fn {F}. Arguments f_max2 {F}.
Arguments f_min2 {F}. Arguments f_to32 {F}. Arguments f_lit {F}.

(** [𝔻 = 𝔽 ∪ {•}]. *)
Inductive val (F : Type) := Def (x : F) | Undef.
Arguments Def {F}. Arguments Undef {F}.

Section Semantics.
Context {F : Type} (A : arith F).

(** [⊕ ⊖ ⊗ ⊘ max min] on [𝔻]: [•] is absorbing (spec/values.md). *)
Definition lift (f : F -> F -> F) (a b : val F) : val F :=
  match a, b with Def x, Def y => Def (f x y) | _, _ => Undef end.

(** The functions of one operand on [𝔻]. *)
Definition lift1 (f : F -> F) (a : val F) : val F :=
  match a with Def x => Def (f x) | Undef => Undef end.

(** The operations in element type [τ]. *)
Definition binop_den (o : binop) (τ : etype) : val F -> val F -> val F :=
  match o with
  | Add => lift (f_add A τ) | Sub => lift (f_sub A τ)
  | Mul => lift (f_mul A τ) | Div => lift (f_div A τ)
  end.

Definition redop_den (o : redop) (τ : etype) : val F -> val F -> val F :=
  match o with
  | RSum => lift (f_add A τ) | RProd => lift (f_mul A τ)
  | RMax => lift (f_max A τ) | RMin => lift (f_min A τ)
  end.

Definition func_den (f : func) (τ : etype) : val F -> val F := lift1 (f_fn A f τ).

Definition func2_den (g : func2) : val F -> val F -> val F :=
  match g with FMax => lift (f_max2 A) | FMin => lift (f_min2 A) end.

(** The conversion to [τ]: to [f32] rounds, to [f64] is exact. *)
Definition conv (τ : etype) : F -> F := match τ with F32 => f_to32 A | F64 => fun x => x end.

Definition conv_den (τ : etype) : val F -> val F := lift1 (conv τ).

Arguments binop_den : simpl never.
Arguments redop_den : simpl never.
Arguments func_den : simpl never.
Arguments func2_den : simpl never.
Arguments conv_den : simpl never.

Record tensor := Tensor { tshape : shape; telem : etype; tget : list nat -> val F }.

(** The store [μ]: [None] for an undeclared name. *)
Definition store := name -> option tensor.

Fixpoint inbb (j t : list nat) : bool :=
  match j, t with
  | [], [] => true
  | a :: j, n :: t => (1 <=? a) && (a <=? n) && inbb j t
  | _, _ => false
  end.

Lemma inbb_inb j t : inbb j t = true <-> inb j t.
Proof.
  unfold inb. revert t; induction j as [|a j IH]; intros [|n t].
  - simpl. split; auto.
  - simpl. split; intros H; [discriminate|inversion H].
  - simpl. split; intros H; [discriminate|inversion H].
  - cbn -[Nat.leb]. rewrite !andb_true_iff, !Nat.leb_le, IH. split.
    + intros [[H1 H2] H3]. constructor; auto.
    + intros H; inversion H; subst; auto.
Qed.

(** The only way to read a tensor: fails outside its index set. *)
Definition read (T : tensor) (j : list nat) : option (val F) :=
  if inbb j (tshape T) then Some (tget T j) else None.

Definition map2 (f : val F -> val F -> val F) (a b : option (val F)) : option (val F) :=
  match a, b with Some x, Some y => Some (f x y) | _, _ => None end.

Definition map1 (f : val F -> val F) (a : option (val F)) : option (val F) :=
  match a with Some x => Some (f x) | None => None end.

(** [fold_⊙ (v_1, ..., v_n)]: a left fold from the first element; no identity element, so an
    empty list has no fold. *)
Fixpoint fold_from (op : val F -> val F -> val F) (acc : val F) (l : list (option (val F)))
  : option (val F) :=
  match l with
  | [] => Some acc
  | Some x :: l => fold_from op (op acc x) l
  | None :: _ => None
  end.

Definition fold1 (op : val F -> val F -> val F) (l : list (option (val F))) : option (val F) :=
  match l with Some x :: l => fold_from op x l | _ => None end.

Definition is_scalar (t : shape) : bool := match t with [] => true | _ => false end.

Definition den := list nat -> option (val F).

(** [⟦e⟧_μ] at element type [τ], with the shape [τ(e)] it is defined on. One arm per
    equation. *)
Fixpoint sem (μ : store) (τ : etype) (e : expr) : option (shape * den) :=
  match e with
  | EVar x =>                                                          (* [S-Var] *)
      match μ x with
      | Some T => if etype_eqb (telem T) τ then Some (tshape T, read T) else None
      | None => None
      end
  | ELit c _ =>                                                        (* [S-Lit] *)
      Some ([], fun j => match j with [] => Some (Def (f_lit A τ c)) | _ => None end)
  | EParen e => sem μ τ e                                              (* [S-Paren] *)
  | EBin o e0 e1 =>
      match sem μ τ e0, sem μ τ e1 with
      | Some (t0, f0), Some (t1, f1) =>
          match o with
          | Mul => if is_scalar t0
                   then Some (t1, fun j => map2 (binop_den Mul τ) (f0 []) (f1 j))   (* [S-SMul] *)
                   else Some (t0, fun j => map2 (binop_den Mul τ) (f0 j) (f1 j))    (* [S-Mul] *)
          | Div => if is_scalar t1
                   then Some (t0, fun j => map2 (binop_den Div τ) (f0 j) (f1 []))   (* [S-SDiv] *)
                   else Some (t0, fun j => map2 (binop_den Div τ) (f0 j) (f1 j))    (* [S-Div] *)
          | _ => Some (t0, fun j => map2 (binop_den o τ) (f0 j) (f1 j)) (* [S-Add], [S-Sub] *)
          end
      | _, _ => None
      end
  | EProd e0 e1 =>                                                     (* [S-Prod] *)
      match sem μ τ e0, sem μ τ e1 with
      | Some (t0, f0), Some (t1, f1) =>
          Some (t0 ++ t1, fun j => map2 (binop_den Mul τ) (f0 (firstn (length t0) j))
                                                            (f1 (skipn (length t0) j)))
      | _, _ => None
      end
  | ERed o i e =>                                                      (* [S-Red] *)
      match sem μ τ e with
      | Some (t, f) =>
          Some (del (i - 1) t, fun j =>
            fold1 (redop_den o τ) (map (fun v => f (ins (i - 1) v j)) (seq 1 (nth (i - 1) t 0))))
      | None => None
      end
  | ETransp p q e =>                                                   (* [S-Transp] *)
      match sem μ τ e with
      | Some (t, f) => Some (swap (p - 1) (q - 1) t, fun j => f (swap (p - 1) (q - 1) j))
      | None => None
      end
  | EDiag p q e =>                                                     (* [S-Diag] *)
      match sem μ τ e with
      | Some (t, f) =>
          Some (del (hi p q - 1) t, fun j => f (ins (hi p q - 1) (nth (lo p q - 1) j 0) j))
      | None => None
      end
  | EContr p q e =>                                                    (* [S-Contr] *)
      match sem μ τ e with
      | Some (t, f) =>
          Some (del (lo p q - 1) (del (hi p q - 1) t), fun j =>
            fold1 (binop_den Add τ)
              (map (fun v => f (ins (hi p q - 1) v (ins (lo p q - 1) v j)))
                   (seq 1 (nth (lo p q - 1) t 0))))
      | None => None
      end
  | EExpa p n e =>                                                     (* [S-Expa] *)
      match sem μ τ e with
      | Some (t, f) => Some (ins (p - 1) n t, fun j => f (del (p - 1) j))
      | None => None
      end
  | EProj p m e =>                                                     (* [S-Proj] *)
      match sem μ τ e with
      | Some (t, f) => Some (del (p - 1) t, fun j => f (ins (p - 1) m j))
      | None => None
      end
  | EFunc g e =>                                                       (* [S-Func] *)
      match sem μ τ e with
      | Some (t, f) => Some (t, fun j => map1 (func_den g τ) (f j))
      | None => None
      end
  | EFunc2 g e0 e1 =>                                                  (* [S-Func2] *)
      match sem μ τ e0, sem μ τ e1 with
      | Some (t0, f0), Some (t1, f1) => Some (t0, fun j => map2 (func2_den g) (f0 j) (f1 j))
      | _, _ => None
      end
  | EConv τ' e =>                                                      (* [S-Conv] *)
      (* The operand is computed in the other element type, then converted. *)
      if etype_eqb τ' τ then
        match sem μ (other τ') e with
        | Some (t, f) => Some (t, fun j => map1 (conv_den τ') (f j))
        | None => None
        end
      else None
  end.

(** The multi-indices of [I(t)], in row-major order. *)
Fixpoint indices (t : shape) : list (list nat) :=
  match t with
  | [] => [[]]
  | n :: t => flat_map (fun a => map (cons a) (indices t)) (seq 1 n)
  end.

Lemma indices_inb j t : In j (indices t) -> inb j t.
Proof.
  revert j; induction t as [|n t IH]; simpl; intros j H.
  - destruct H as [<-|[]]. constructor.
  - apply in_flat_map in H as [a [Ha H]]. apply in_map_iff in H as [j' [<- H]].
    apply in_seq in Ha. constructor; [lia|apply IH; auto].
Qed.

Definition upd_store (μ : store) (x : name) (T : tensor) : store :=
  fun y => if String.eqb y x then Some T else μ y.

Definition defined (r : option (val F)) : bool := match r with Some _ => true | None => false end.

(** [St-Stmt]: the whole right-hand side is evaluated in the old store, in the target's
    element type, then [x] is replaced. Defined only when the right-hand side has the target's
    shape and is defined at every multi-index of it. *)
Definition exec_stmt (μ : store) (s : stmt) : option store :=
  match μ (target s) with
  | None => None
  | Some T =>
  match sem μ (telem T) (value s) with
  | Some (t, f) =>
      if list_eq_dec Nat.eq_dec t (tshape T) then
        if forallb (fun j => defined (f j)) (indices t) then
          Some (upd_store μ (target s)
                  (Tensor t (telem T) (fun j => match f j with Some v => v | None => Undef end)))
        else None
      else None
  | None => None
  end
  end.

(** [St-Seq]. *)
Fixpoint exec_stmts (μ : store) (ss : list stmt) : option store :=
  match ss with
  | [] => Some μ
  | s :: ss => match exec_stmt μ s with Some μ' => exec_stmts μ' ss | None => None end
  end.

(** [Eval-Prog]: the initial store [μ₀]. With at least one qualifier, [input] and [inout]
    variables are supplied by the caller ([arg]); without any, every variable is. The others
    start as [•]. *)
Definition qualified (ds : list decl) : bool :=
  existsb (fun d => match dqual d with Some _ => true | None => false end) ds.

Definition supplied (anyq : bool) (d : decl) : bool :=
  match dqual d with
  | None => negb anyq
  | Some Input | Some InOut => true
  | Some Output => false
  end.

Definition find_decl (ds : list decl) (x : name) : option decl :=
  find (fun d => String.eqb x (dname d)) ds.

Definition init_store (ds : list decl) (arg : name -> list nat -> val F) : store :=
  fun x => match find_decl ds x with
           | Some d => Some (Tensor (dshape d) (delem d)
                              (if supplied (qualified ds) d then arg x else fun _ => Undef))
           | None => None
           end.

Definition run (p : program) (arg : name -> list nat -> val F) : option store :=
  exec_stmts (init_store (decls p) arg) (stmts p).

(** ** Type safety *)

(** A property [P] of values that literals have and every operation keeps: [True] (type
    safety proper), or "is not [•]" (no [•] is created by computation). *)
Record closed (P : val F -> Prop) : Prop := {
  closed_lit : forall τ c, P (Def (f_lit A τ c));
  closed_bin : forall o τ a b, P a -> P b -> P (binop_den o τ a b);
  closed_red : forall o τ a b, P a -> P b -> P (redop_den o τ a b);
  closed_func : forall g τ a, P a -> P (func_den g τ a);
  closed_func2 : forall g a b, P a -> P b -> P (func2_den g a b);
  closed_conv : forall τ a, P a -> P (conv_den τ a);
}.

(** The store matches the context: every declared name holds a tensor of its declared shape
    and element type, whose elements have [P]. *)
Definition store_ok (P : val F -> Prop) (G : ctx) (μ : store) : Prop :=
  forall x t τ, lookup G x = Some (t, τ) ->
  exists T, μ x = Some T /\ tshape T = t /\ telem T = τ /\ forall j, inb j t -> P (tget T j).

(** The value of an expression of type [t]: defined, with [P], at every multi-index of [t]. *)
Definition den_ok (P : val F -> Prop) (t : shape) (f : den) : Prop :=
  forall j, inb j t -> exists v, f j = Some v /\ P v.

Lemma fold_from_ok (P : val F -> Prop) (op : val F -> val F -> val F) acc l :
  (forall a b, P a -> P b -> P (op a b)) -> P acc ->
  (forall r, In r l -> exists v, r = Some v /\ P v) ->
  exists v, fold_from op acc l = Some v /\ P v.
Proof.
  intros Hop; revert acc; induction l as [|r l IH]; intros acc Hacc Hl; simpl; eauto.
  destruct (Hl r (or_introl eq_refl)) as [v [-> Hv]].
  apply IH; auto. intros r' Hr'. apply Hl. now right.
Qed.

Lemma fold1_ok (P : val F -> Prop) (op : val F -> val F -> val F) l :
  (forall a b, P a -> P b -> P (op a b)) -> l <> [] ->
  (forall r, In r l -> exists v, r = Some v /\ P v) ->
  exists v, fold1 op l = Some v /\ P v.
Proof.
  intros Hop Hne Hl. destruct l as [|r l]; [congruence|].
  destruct (Hl r (or_introl eq_refl)) as [v [-> Hv]]. simpl.
  apply fold_from_ok; auto. intros r' Hr'. apply Hl. now right.
Qed.

Lemma fold_seq_ok (P : val F -> Prop) (op : val F -> val F -> val F) (g : nat -> option (val F)) n :
  (forall a b, P a -> P b -> P (op a b)) -> 1 <= n ->
  (forall v, 1 <= v <= n -> exists x, g v = Some x /\ P x) ->
  exists x, fold1 op (map g (seq 1 n)) = Some x /\ P x.
Proof.
  intros Hop Hn Hg. apply fold1_ok; auto.
  - destruct n; [lia|]. simpl. discriminate.
  - intros r Hr. apply in_map_iff in Hr as [v [<- Hv]]. apply in_seq in Hv. apply Hg. lia.
Qed.

Ltac split_ok := match goal with
  | H : exists _, _ |- _ => destruct H as [? [? ?]]
  end.

(** The value at one multi-index: defined, with [P] (an operation of [closed P]). *)
Ltac value_ok :=
  match goal with
  | Hc : closed ?P |- exists v, Some ?x = Some v /\ ?P v =>
      exists x; split; [reflexivity|];
      first [ apply (closed_lit P Hc) | apply (closed_bin P Hc) | apply (closed_func P Hc)
            | apply (closed_func2 P Hc) | apply (closed_conv P Hc) ]; auto
  end.

(** The two operands of a binary operation at one multi-index each. *)
Ltac operands H0 H1 j0 j1 :=
  destruct (H0 j0 ltac:(auto)) as [? [-> ?]], (H1 j1 ltac:(auto)) as [? [-> ?]]; simpl.

(** Type safety of expressions (TeIL paper Lemma 4.3, report Lemma 2): in a store that matches
    the context, a well-typed expression has a value of its shape at its element type, defined
    at every multi-index of its shape, every read on the way in bounds and of the element type
    the typing says; and every value has [P] when the store's values have it. *)
Theorem sem_safe (P : val F -> Prop) G μ e t τ :
  closed P -> ctx_positive G -> store_ok P G μ -> G ⊢ e ∈ t of τ ->
  exists f, sem μ τ e = Some (t, f) /\ den_ok P t f.
Proof.
  intros Hc HG Hμ Ht.
  assert (Hnil : inb [] []) by constructor.
  induction Ht; simpl; unfold den_ok in *.
  - (* T_Var *)
    destruct (Hμ x t τ H) as [T [-> [<- [<- HT]]]]. rewrite etype_eqb_refl.
    eexists; split; [reflexivity|].
    intros j Hj. unfold read. apply inbb_inb in Hj as Hj'. rewrite Hj'. eauto.
  - (* T_Paren *) auto.
  - (* T_Lit *)
    eexists; split; [reflexivity|]. intros j Hj. apply inb_nil in Hj. subst.
    value_ok.
  - (* T_Add *)
    destruct IHHt1 as [f0 [-> H0]], IHHt2 as [f1 [-> H1]].
    eexists; split; [reflexivity|]. intros j Hj. operands H0 H1 j j. value_ok.
  - (* T_Mul *)
    destruct IHHt1 as [f0 [-> H0]], IHHt2 as [f1 [-> H1]].
    destruct (is_scalar t) eqn:Es; (eexists; split; [reflexivity|]); intros j Hj.
    + destruct t; [|discriminate]. apply inb_nil in Hj; subst.
      operands H0 H1 (@nil nat) (@nil nat). value_ok.
    + operands H0 H1 j j. value_ok.
  - (* T_Elem *)
    destruct IHHt1 as [f0 [-> H0]], IHHt2 as [f1 [-> H1]].
    destruct H as [-> | ->].
    + eexists; split; [reflexivity|]. intros j Hj. operands H0 H1 j j. value_ok.
    + destruct (is_scalar t) eqn:Es; (eexists; split; [reflexivity|]); intros j Hj.
      * destruct t; [|discriminate]. apply inb_nil in Hj; subst.
        operands H0 H1 (@nil nat) (@nil nat). value_ok.
      * operands H0 H1 j j. value_ok.
  - (* T_SMul *)
    destruct IHHt1 as [f0 [-> H0]], IHHt2 as [f1 [-> H1]].
    simpl. eexists; split; [reflexivity|]. intros j Hj.
    operands H0 H1 (@nil nat) j. value_ok.
  - (* T_SDiv *)
    destruct IHHt1 as [f0 [-> H0]], IHHt2 as [f1 [-> H1]].
    simpl. eexists; split; [reflexivity|]. intros j Hj.
    operands H0 H1 j (@nil nat). value_ok.
  - (* T_Prod *)
    destruct IHHt1 as [f0 [-> H0]], IHHt2 as [f1 [-> H1]].
    eexists; split; [reflexivity|]. intros j Hj. apply inb_app in Hj as [Hj0 Hj1].
    operands H0 H1 (firstn (length t0) j) (skipn (length t0) j). value_ok.
  - (* T_Red *)
    pose proof (has_type_positive _ _ _ _ HG Ht) as Hp.
    destruct IHHt as [f [-> Hf]]. eexists; split; [reflexivity|]. intros j Hj.
    apply fold_seq_ok; [apply closed_red; auto| |].
    + apply positive_nth; auto; lia.
    + intros v Hv. apply Hf. apply inb_ins; auto; lia.
  - (* T_Transp *)
    pose proof (has_type_positive _ _ _ _ HG Ht) as Hp.
    destruct IHHt as [f [-> Hf]]. eexists; split; [reflexivity|]. intros k Hk.
    apply Hf. apply inb_swap; auto; lia.
  - (* T_Diag *)
    pose proof (has_type_positive _ _ _ _ HG Ht) as Hp.
    destruct IHHt as [f [-> Hf]]. eexists; split; [reflexivity|]. intros k Hk.
    apply Hf. destruct (lo_hi i j H1) as [Hlh Hij].
    assert (Hn : nth (lo i j - 1) t 0 = nth (hi i j - 1) t 0)
      by (destruct Hij as [[-> ->]|[-> ->]]; auto).
    assert (hi i j <= length t /\ 1 <= lo i j) by (destruct Hij as [[-> ->]|[-> ->]]; lia).
    pose proof (inb_nth _ _ (lo i j - 1) Hk) as Hl.
    rewrite length_del, nth_del_lt in Hl by lia.
    apply inb_ins; auto; [lia|]. rewrite <- Hn. apply Hl. lia.
  - (* T_Contr *)
    pose proof (has_type_positive _ _ _ _ HG Ht) as Hp.
    destruct IHHt as [f [-> Hf]]. eexists; split; [reflexivity|]. intros k Hk.
    destruct (lo_hi i j H1) as [Hlh Hij].
    assert (Hn : nth (lo i j - 1) t 0 = nth (hi i j - 1) t 0)
      by (destruct Hij as [[-> ->]|[-> ->]]; auto).
    assert (hi i j <= length t /\ 1 <= lo i j) by (destruct Hij as [[-> ->]|[-> ->]]; lia).
    apply fold_seq_ok; [apply closed_bin; auto| |].
    + apply positive_nth; auto; lia.
    + intros v Hv. apply Hf. apply inb_ins; [|lia|rewrite <- Hn; lia].
      apply inb_ins; auto.
      * rewrite length_del; lia.
      * rewrite nth_del_lt by lia. lia.
  - (* T_Expa *)
    destruct IHHt as [f [-> Hf]].
    eexists; split; [reflexivity|]. intros k Hk.
    apply Hf. eapply inb_del; eauto. lia.
  - (* T_Proj *)
    pose proof (has_type_positive _ _ _ _ HG Ht) as Hp.
    destruct IHHt as [f [-> Hf]]. eexists; split; [reflexivity|]. intros k Hk.
    apply Hf. apply inb_ins; auto; lia.
  - (* T_Func *)
    destruct IHHt as [f0 [-> Hf]]. eexists; split; [reflexivity|]. intros j Hj.
    destruct (Hf j Hj) as [v [-> Hv]]. simpl. value_ok.
  - (* T_Func2 *)
    destruct IHHt1 as [f0 [-> H0]], IHHt2 as [f1 [-> H1]].
    eexists; split; [reflexivity|]. intros j Hj. operands H0 H1 j j. value_ok.
  - (* T_Conv *)
    rewrite etype_eqb_refl. destruct IHHt as [f0 [-> Hf]].
    eexists; split; [reflexivity|]. intros j Hj.
    destruct (Hf j Hj) as [v [-> Hv]]. simpl. value_ok.
Qed.

(** ** Statements and programs *)

Lemma store_ok_upd P G μ x T t τ :
  store_ok P G μ -> lookup G x = Some (t, τ) -> tshape T = t -> telem T = τ ->
  (forall j, inb j t -> P (tget T j)) ->
  store_ok P G (upd_store μ x T).
Proof.
  intros Hμ Hx Hs He HT y u υ Hy. unfold upd_store. destruct (String.eqb_spec y x).
  - subst. rewrite Hx in Hy. injection Hy as <- <-. eauto.
  - apply Hμ; auto.
Qed.

(** [St-Stmt] on a well-formed statement (OK-Stmt) in a matching store: defined; the target
    now holds [⟦e⟧_μ], computed from the old store in the target's element type, at every
    multi-index of its shape; every other variable is unchanged; the new store matches the
    context. *)
Theorem stmt_safe (P : val F -> Prop) G μ s :
  closed P -> ctx_positive G -> store_ok P G μ -> stmt_ok G s ->
  exists μ' t τ f T',
    exec_stmt μ s = Some μ' /\ sem μ τ (value s) = Some (t, f) /\
    lookup G (target s) = Some (t, τ) /\ μ' (target s) = Some T' /\ tshape T' = t /\
    telem T' = τ /\
    (forall j, inb j t -> f j = Some (tget T' j)) /\
    (forall y, y <> target s -> μ' y = μ y) /\ store_ok P G μ'.
Proof.
  intros Hc HG Hμ [x e t τ Hx He]. simpl.
  destruct (sem_safe P G μ e t τ Hc HG Hμ He) as [f [Hf Hok]].
  destruct (Hμ x t τ Hx) as [T [HT [Hs [Hel HTv]]]].
  unfold exec_stmt. simpl. rewrite HT, Hel, Hf.
  destruct (list_eq_dec Nat.eq_dec t (tshape T)) as [_|n]; [|congruence].
  assert (Hall : forallb (fun j => defined (f j)) (indices t) = true).
  { apply forallb_forall. intros j Hj. apply indices_inb in Hj.
    destruct (Hok j Hj) as [v [-> _]]. reflexivity. }
  rewrite Hall.
  set (T' := Tensor t τ (fun j => match f j with Some v => v | None => Undef end)).
  exists (upd_store μ x T'), t, τ, f, T'.
  split; [reflexivity|]. split; [exact Hf|]. split; [assumption|].
  split; [unfold upd_store; now rewrite String.eqb_refl|]. split; [reflexivity|].
  split; [reflexivity|]. split; [|split].
  - intros j Hj. destruct (Hok j Hj) as [v [Hv _]]. simpl. now rewrite Hv.
  - intros y Hy. unfold upd_store. apply String.eqb_neq in Hy. now rewrite Hy.
  - apply store_ok_upd with t τ; auto. intros j Hj. simpl. destruct (Hok j Hj) as [v [-> Hv]]. auto.
Qed.

(** [St-Seq] on well-formed statements (OK-Seq). *)
Theorem stmts_safe (P : val F -> Prop) G μ ss :
  closed P -> ctx_positive G -> store_ok P G μ -> stmts_ok G ss ->
  exists μ', exec_stmts μ ss = Some μ' /\ store_ok P G μ'.
Proof.
  intros Hc HG Hμ Hss. revert μ Hμ. induction Hss as [|s ss Hs Hss IH]; intros μ Hμ; simpl; eauto.
  destruct (stmt_safe P G μ s Hc HG Hμ Hs)
    as [μ' [? [? [? [? [-> [_ [_ [_ [_ [_ [_ [_ Hμ']]]]]]]]]]]]].
  eauto.
Qed.

Lemma decls_lookup G0 ds G x t τ :
  decls_ok G0 ds G -> lookup G x = Some (t, τ) ->
  lookup G0 x = Some (t, τ) \/
  (lookup G0 x = None /\ exists d, find_decl ds x = Some d /\ dshape d = t /\ delem d = τ).
Proof.
  induction 1 as [G0|G0 q y u υ ds G' Hy Hu Hds IH]; auto.
  intros Hx. specialize (IH Hx). unfold find_decl in *. simpl in *.
  destruct (String.eqb_spec x y) as [->|Hne].
  - destruct IH as [H|[H _]]; [|discriminate].
    injection H as <- <-. right. split; auto. eexists; split; [reflexivity|auto].
  - exact IH.
Qed.

Lemma init_store_ok (P : val F -> Prop) G ds arg :
  decls_ok [] ds G ->
  (forall x d j, find_decl ds x = Some d ->
     P (if supplied (qualified ds) d then arg x j else Undef)) ->
  store_ok P G (init_store ds arg).
Proof.
  intros Hds HP x t τ Hx.
  destruct (decls_lookup _ _ _ _ _ _ Hds Hx) as [H|[_ [d [Hd [Hs He]]]]]; [discriminate|].
  unfold init_store. rewrite Hd. eexists; split; [reflexivity|]. split; auto. split; auto.
  intros j _. simpl. specialize (HP x d j Hd). destruct (supplied _ d); auto.
Qed.

Lemma closed_true : closed (fun _ => True).
Proof. split; auto. Qed.

Lemma closed_defined : closed (fun v => v <> Undef).
Proof.
  split; try discriminate;
    unfold binop_den, redop_den, func_den, func2_den, conv_den, lift, lift1;
    intros []; intros; repeat match goal with a : val F |- _ => destruct a end;
    congruence.
Qed.

(** Type safety of programs (TeIL paper Theorem 4.6, report Theorem 1): a well-formed
    program ([OK-Prog]) runs to completion from the initial store of [Eval-Prog], whatever
    the caller supplies; every statement is defined, every read in bounds, and the final store
    holds a tensor of the declared type under every declared name. *)
Theorem prog_safe p G arg :
  prog_ok p G ->
  exists μ', run p arg = Some μ' /\ store_ok (fun _ => True) G μ'.
Proof.
  intros Hp. destruct Hp as [ds ss G Hds Hss]. unfold run; simpl.
  apply stmts_safe; auto.
  - apply closed_true.
  - eapply decls_ok_positive; eauto. intros x t τ H; discriminate.
  - apply init_store_ok; auto.
Qed.

(** Undefinedness only where spec/semantics.md says: [•] enters only through the initial
    store. If the caller supplies every variable (a program without qualifiers, or one whose
    every variable is [input] or [inout]) and supplies no [•], no value of the run is [•]. *)
Theorem prog_no_undef p G arg :
  prog_ok p G ->
  (forall d, In d (decls p) -> supplied (qualified (decls p)) d = true) ->
  (forall x j, arg x j <> Undef) ->
  exists μ', run p arg = Some μ' /\ store_ok (fun v => v <> Undef) G μ'.
Proof.
  intros Hp Hsup Harg. destruct Hp as [ds ss G Hds Hss]. unfold run; simpl in *.
  apply stmts_safe; auto.
  - apply closed_defined.
  - eapply decls_ok_positive; eauto. intros x t τ H; discriminate.
  - apply init_store_ok; auto. intros x d j Hd.
    apply find_some in Hd as [Hin _]. rewrite (Hsup d Hin). auto.
Qed.

End Semantics.
