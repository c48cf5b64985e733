(** * Semantics: the equations of spec/semantics.md, and type safety.

    The value domain [𝔻 = 𝔽 ∪ {•}] is [val F]: [Def x] for a number [x : F] and [Undef] for
    [•]. The numbers are abstract: [F] and its operations ([arith F]) are parameters, so
    nothing below depends on binary64 rounding; spec/values.md fixes them to IEEE-754
    binary64. The operations on [𝔻] are those on [F] with [•] absorbing ([lift]).

    A store maps each declared name to a tensor: a type and a function from multi-indices to
    [𝔻]. Every read of a tensor goes through [read], which fails ([None]) outside the index
    set of its type. The value of an expression, [sem μ e], is its type and a function from
    multi-indices to [option 𝔻]; every combinator below is strict in [None], so a [Some]
    answer means that no read on the way failed. *)

From Coq Require Import String List Arith Lia Bool.
From TeIL Require Import Lists Syntax.
Import ListNotations.

Record arith (F : Type) := Arith {
  f_add : F -> F -> F;
  f_sub : F -> F -> F;
  f_mul : F -> F -> F;
  f_div : F -> F -> F;
  f_max : F -> F -> F;
  f_min : F -> F -> F;
  (** [S-Lit]: the number nearest to the decimal text. *)
  f_lit : string -> F;
}.

(** [𝔻 = 𝔽 ∪ {•}]. *)
Arguments f_add {F}. Arguments f_sub {F}. Arguments f_mul {F}. Arguments f_div {F}.
Arguments f_max {F}. Arguments f_min {F}. Arguments f_lit {F}.

Inductive val (F : Type) := Def (x : F) | Undef.
Arguments Def {F}. Arguments Undef {F}.

Section Semantics.
Context {F : Type} (A : arith F).

(** [⊕ ⊖ ⊗ ⊘ max min] on [𝔻]: [•] is absorbing (spec/values.md). *)
Definition lift (f : F -> F -> F) (a b : val F) : val F :=
  match a, b with Def x, Def y => Def (f x y) | _, _ => Undef end.

Definition binop_den (o : binop) : val F -> val F -> val F :=
  match o with
  | Add => lift (f_add A) | Sub => lift (f_sub A)
  | Mul => lift (f_mul A) | Div => lift (f_div A)
  end.

Definition redop_den (o : redop) : val F -> val F -> val F :=
  match o with
  | RSum => lift (f_add A) | RProd => lift (f_mul A)
  | RMax => lift (f_max A) | RMin => lift (f_min A)
  end.

Arguments binop_den : simpl never.
Arguments redop_den : simpl never.

Record tensor := Tensor { tshape : shape; tget : list nat -> val F }.

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

(** [⟦e⟧_μ], with the type [τ(e)] it is defined on. One arm per equation. *)
Fixpoint sem (μ : store) (e : expr) : option (shape * den) :=
  match e with
  | EVar x =>                                                          (* [S-Var] *)
      match μ x with Some T => Some (tshape T, read T) | None => None end
  | ELit c =>                                                          (* [S-Lit] *)
      Some ([], fun j => match j with [] => Some (Def (f_lit A c)) | _ => None end)
  | EParen e => sem μ e                                                (* [S-Paren] *)
  | EBin o e0 e1 =>
      match sem μ e0, sem μ e1 with
      | Some (t0, f0), Some (t1, f1) =>
          match o with
          | Mul => if is_scalar t0
                   then Some (t1, fun j => map2 (binop_den Mul) (f0 []) (f1 j))   (* [S-SMul] *)
                   else Some (t0, fun j => map2 (binop_den Mul) (f0 j) (f1 j))    (* [S-Mul] *)
          | Div => if is_scalar t1
                   then Some (t0, fun j => map2 (binop_den Div) (f0 j) (f1 []))   (* [S-SDiv] *)
                   else Some (t0, fun j => map2 (binop_den Div) (f0 j) (f1 j))    (* [S-Div] *)
          | _ => Some (t0, fun j => map2 (binop_den o) (f0 j) (f1 j))   (* [S-Add], [S-Sub] *)
          end
      | _, _ => None
      end
  | EProd e0 e1 =>                                                     (* [S-Prod] *)
      match sem μ e0, sem μ e1 with
      | Some (t0, f0), Some (t1, f1) =>
          Some (t0 ++ t1, fun j => map2 (binop_den Mul) (f0 (firstn (length t0) j))
                                                          (f1 (skipn (length t0) j)))
      | _, _ => None
      end
  | ERed o i e =>                                                      (* [S-Red] *)
      match sem μ e with
      | Some (t, f) =>
          Some (del (i - 1) t, fun j =>
            fold1 (redop_den o) (map (fun v => f (ins (i - 1) v j)) (seq 1 (nth (i - 1) t 0))))
      | None => None
      end
  | ETransp p q e =>                                                   (* [S-Transp] *)
      match sem μ e with
      | Some (t, f) => Some (swap (p - 1) (q - 1) t, fun j => f (swap (p - 1) (q - 1) j))
      | None => None
      end
  | EDiag p q e =>                                                     (* [S-Diag] *)
      match sem μ e with
      | Some (t, f) =>
          Some (del (hi p q - 1) t, fun j => f (ins (hi p q - 1) (nth (lo p q - 1) j 0) j))
      | None => None
      end
  | EContr p q e =>                                                    (* [S-Contr] *)
      match sem μ e with
      | Some (t, f) =>
          Some (del (lo p q - 1) (del (hi p q - 1) t), fun j =>
            fold1 (binop_den Add)
              (map (fun v => f (ins (hi p q - 1) v (ins (lo p q - 1) v j)))
                   (seq 1 (nth (lo p q - 1) t 0))))
      | None => None
      end
  | EExpa p n e =>                                                     (* [S-Expa] *)
      match sem μ e with
      | Some (t, f) => Some (ins (p - 1) n t, fun j => f (del (p - 1) j))
      | None => None
      end
  | EProj p m e =>                                                     (* [S-Proj] *)
      match sem μ e with
      | Some (t, f) => Some (del (p - 1) t, fun j => f (ins (p - 1) m j))
      | None => None
      end
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

(** [St-Stmt]: the whole right-hand side is evaluated in the old store, then [x] is replaced.
    Defined only when the right-hand side has the target's type and is defined at every
    multi-index of it. *)
Definition exec_stmt (μ : store) (s : stmt) : option store :=
  match μ (target s), sem μ (value s) with
  | Some T, Some (t, f) =>
      if list_eq_dec Nat.eq_dec t (tshape T) then
        if forallb (fun j => defined (f j)) (indices t) then
          Some (upd_store μ (target s)
                  (Tensor t (fun j => match f j with Some v => v | None => Undef end)))
        else None
      else None
  | _, _ => None
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
           | Some d => Some (Tensor (dshape d)
                              (if supplied (qualified ds) d then arg x else fun _ => Undef))
           | None => None
           end.

Definition run (p : program) (arg : name -> list nat -> val F) : option store :=
  exec_stmts (init_store (decls p) arg) (stmts p).

(** ** Type safety *)

(** A property [P] of values that literals have and every operation keeps: [True] (type
    safety proper), or "is not [•]" (no [•] is created by computation). *)
Definition closed (P : val F -> Prop) : Prop :=
  (forall c, P (Def (f_lit A c))) /\
  (forall o a b, P a -> P b -> P (binop_den o a b)) /\
  (forall o a b, P a -> P b -> P (redop_den o a b)).

(** The store matches the context: every declared name holds a tensor of its declared type,
    whose elements have [P]. *)
Definition store_ok (P : val F -> Prop) (G : ctx) (μ : store) : Prop :=
  forall x t, lookup G x = Some t ->
  exists T, μ x = Some T /\ tshape T = t /\ forall j, inb j t -> P (tget T j).

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

(** Type safety of expressions (TeIL paper Lemma 4.3, report Lemma 2): in a store that matches
    the context, a well-typed expression has a value of its type, defined at every multi-index
    of its type, every read on the way in bounds; and every value has [P] when the store's
    values have it. *)
Theorem sem_safe (P : val F -> Prop) G μ e t :
  closed P -> ctx_positive G -> store_ok P G μ -> G ⊢ e ∈ t ->
  exists f, sem μ e = Some (t, f) /\ den_ok P t f.
Proof.
  intros [Hlit [Hbin Hred]] HG Hμ Ht.
  induction Ht; simpl; unfold den_ok in *.
  - (* T_Var *)
    destruct (Hμ x t H) as [T [-> [<- HT]]]. eexists; split; [reflexivity|].
    intros j Hj. unfold read. apply inbb_inb in Hj as Hj'. rewrite Hj'. eauto.
  - (* T_Paren *) auto.
  - (* T_Lit *) eexists; split; [reflexivity|]. intros j Hj. apply inb_nil in Hj. subst. eauto.
  - (* T_Add *)
    destruct IHHt1 as [f0 [-> H0]]; auto. destruct IHHt2 as [f1 [-> H1]]; auto.
    eexists; split; [reflexivity|]. intros j Hj.
    destruct (H0 j Hj) as [a [-> Ha]], (H1 j Hj) as [b [-> Hb]]. simpl. eauto.
  - (* T_Mul *)
    destruct IHHt1 as [f0 [-> H0]]; auto. destruct IHHt2 as [f1 [-> H1]]; auto.
    destruct (is_scalar t) eqn:Es; (eexists; split; [reflexivity|]); intros j Hj.
    + destruct t; [|discriminate]. apply inb_nil in Hj; subst.
      destruct (H0 [] ltac:(constructor)) as [a [-> Ha]], (H1 [] ltac:(constructor)) as [b [-> Hb]].
      simpl. eauto.
    + destruct (H0 j Hj) as [a [-> Ha]], (H1 j Hj) as [b [-> Hb]]. simpl. eauto.
  - (* T_Elem *)
    destruct IHHt1 as [f0 [-> H0]]; auto. destruct IHHt2 as [f1 [-> H1]]; auto.
    destruct H as [-> | ->].
    + eexists; split; [reflexivity|]. intros j Hj.
      destruct (H0 j Hj) as [a [-> Ha]], (H1 j Hj) as [b [-> Hb]]. simpl. eauto.
    + destruct (is_scalar t) eqn:Es; (eexists; split; [reflexivity|]); intros j Hj.
      * destruct t; [|discriminate]. apply inb_nil in Hj; subst.
        destruct (H0 [] ltac:(constructor)) as [a [-> Ha]], (H1 [] ltac:(constructor)) as [b [-> Hb]].
        simpl. eauto.
      * destruct (H0 j Hj) as [a [-> Ha]], (H1 j Hj) as [b [-> Hb]]. simpl. eauto.
  - (* T_SMul *)
    destruct IHHt1 as [f0 [-> H0]]; auto. destruct IHHt2 as [f1 [-> H1]]; auto.
    simpl. eexists; split; [reflexivity|]. intros j Hj.
    destruct (H0 [] ltac:(constructor)) as [a [-> Ha]], (H1 j Hj) as [b [-> Hb]]. simpl. eauto.
  - (* T_SDiv *)
    destruct IHHt1 as [f0 [-> H0]]; auto. destruct IHHt2 as [f1 [-> H1]]; auto.
    simpl. eexists; split; [reflexivity|]. intros j Hj.
    destruct (H0 j Hj) as [a [-> Ha]], (H1 [] ltac:(constructor)) as [b [-> Hb]]. simpl. eauto.
  - (* T_Prod *)
    destruct IHHt1 as [f0 [-> H0]]; auto. destruct IHHt2 as [f1 [-> H1]]; auto.
    eexists; split; [reflexivity|]. intros j Hj. apply inb_app in Hj as [Hj0 Hj1].
    destruct (H0 _ Hj0) as [a [-> Ha]], (H1 _ Hj1) as [b [-> Hb]]. simpl. eauto.
  - (* T_Red *)
    pose proof (has_type_positive _ _ _ HG Ht) as Hp.
    destruct IHHt as [f [-> Hf]]; auto. eexists; split; [reflexivity|]. intros j Hj.
    apply fold_seq_ok; auto.
    + apply positive_nth; auto; lia.
    + intros v Hv. apply Hf. apply inb_ins; auto; lia.
  - (* T_Transp *)
    pose proof (has_type_positive _ _ _ HG Ht) as Hp.
    destruct IHHt as [f [-> Hf]]; auto. eexists; split; [reflexivity|]. intros k Hk.
    apply Hf. apply inb_swap; auto; lia.
  - (* T_Diag *)
    pose proof (has_type_positive _ _ _ HG Ht) as Hp.
    destruct IHHt as [f [-> Hf]]; auto. eexists; split; [reflexivity|]. intros k Hk.
    apply Hf. destruct (lo_hi i j H1) as [Hlh Hij].
    assert (Hn : nth (lo i j - 1) t 0 = nth (hi i j - 1) t 0)
      by (destruct Hij as [[-> ->]|[-> ->]]; auto).
    assert (hi i j <= length t /\ 1 <= lo i j) by (destruct Hij as [[-> ->]|[-> ->]]; lia).
    pose proof (inb_nth _ _ (lo i j - 1) Hk) as Hl.
    rewrite length_del, nth_del_lt in Hl by lia.
    apply inb_ins; auto; [lia|]. rewrite <- Hn. apply Hl. lia.
  - (* T_Contr *)
    pose proof (has_type_positive _ _ _ HG Ht) as Hp.
    destruct IHHt as [f [-> Hf]]; auto. eexists; split; [reflexivity|]. intros k Hk.
    destruct (lo_hi i j H1) as [Hlh Hij].
    assert (Hn : nth (lo i j - 1) t 0 = nth (hi i j - 1) t 0)
      by (destruct Hij as [[-> ->]|[-> ->]]; auto).
    assert (hi i j <= length t /\ 1 <= lo i j) by (destruct Hij as [[-> ->]|[-> ->]]; lia).
    apply fold_seq_ok; auto.
    + apply positive_nth; auto; lia.
    + intros v Hv. apply Hf. apply inb_ins; [|lia|rewrite <- Hn; lia].
      apply inb_ins; auto.
      * rewrite length_del; lia.
      * rewrite nth_del_lt by lia. lia.
  - (* T_Expa *)
    destruct IHHt as [f [-> Hf]]; auto.
    eexists; split; [reflexivity|]. intros k Hk.
    apply Hf. eapply inb_del; eauto. lia.
  - (* T_Proj *)
    pose proof (has_type_positive _ _ _ HG Ht) as Hp.
    destruct IHHt as [f [-> Hf]]; auto. eexists; split; [reflexivity|]. intros k Hk.
    apply Hf. apply inb_ins; auto; lia.
Qed.

(** ** Statements and programs *)

Lemma store_ok_upd P G μ x T t :
  store_ok P G μ -> lookup G x = Some t -> tshape T = t ->
  (forall j, inb j t -> P (tget T j)) ->
  store_ok P G (upd_store μ x T).
Proof.
  intros Hμ Hx Hs HT y u Hy. unfold upd_store. destruct (String.eqb_spec y x).
  - subst. rewrite Hx in Hy. injection Hy as <-. eauto.
  - apply Hμ; auto.
Qed.

(** [St-Stmt] on a well-formed statement (OK-Stmt) in a matching store: defined; the target
    now holds [⟦e⟧_μ] at every multi-index of its type, computed from the old store; every
    other variable is unchanged; the new store matches the context. *)
Theorem stmt_safe (P : val F -> Prop) G μ s :
  closed P -> ctx_positive G -> store_ok P G μ -> stmt_ok G s ->
  exists μ' t f T',
    exec_stmt μ s = Some μ' /\ sem μ (value s) = Some (t, f) /\
    lookup G (target s) = Some t /\ μ' (target s) = Some T' /\ tshape T' = t /\
    (forall j, inb j t -> f j = Some (tget T' j)) /\
    (forall y, y <> target s -> μ' y = μ y) /\ store_ok P G μ'.
Proof.
  intros Hc HG Hμ [x e t Hx He]. simpl.
  destruct (sem_safe P G μ e t Hc HG Hμ He) as [f [Hf Hok]].
  destruct (Hμ x t Hx) as [T [HT [Hs HTv]]].
  unfold exec_stmt. simpl. rewrite HT, Hf.
  destruct (list_eq_dec Nat.eq_dec t (tshape T)) as [_|n]; [|congruence].
  assert (Hall : forallb (fun j => defined (f j)) (indices t) = true).
  { apply forallb_forall. intros j Hj. apply indices_inb in Hj.
    destruct (Hok j Hj) as [v [-> _]]. reflexivity. }
  rewrite Hall.
  set (T' := Tensor t (fun j => match f j with Some v => v | None => Undef end)).
  exists (upd_store μ x T'), t, f, T'.
  split; [reflexivity|]. split; [reflexivity|]. split; [assumption|].
  split; [unfold upd_store; now rewrite String.eqb_refl|]. split; [reflexivity|].
  split; [|split].
  - intros j Hj. destruct (Hok j Hj) as [v [Hv _]]. simpl. now rewrite Hv.
  - intros y Hy. unfold upd_store. apply String.eqb_neq in Hy. now rewrite Hy.
  - apply store_ok_upd with t; auto. intros j Hj. simpl. destruct (Hok j Hj) as [v [-> Hv]]. auto.
Qed.

(** [St-Seq] on well-formed statements (OK-Seq). *)
Theorem stmts_safe (P : val F -> Prop) G μ ss :
  closed P -> ctx_positive G -> store_ok P G μ -> stmts_ok G ss ->
  exists μ', exec_stmts μ ss = Some μ' /\ store_ok P G μ'.
Proof.
  intros Hc HG Hμ Hss. revert μ Hμ. induction Hss as [|s ss Hs Hss IH]; intros μ Hμ; simpl; eauto.
  destruct (stmt_safe P G μ s Hc HG Hμ Hs) as [μ' [? [? [? [-> [_ [_ [_ [_ [_ [_ Hμ']]]]]]]]]]].
  eauto.
Qed.

Lemma decls_lookup G0 ds G x t :
  decls_ok G0 ds G -> lookup G x = Some t ->
  lookup G0 x = Some t \/
  (lookup G0 x = None /\ exists d, find_decl ds x = Some d /\ dshape d = t).
Proof.
  induction 1 as [G0|G0 q y u ds G' Hy Hu Hds IH]; auto.
  intros Hx. specialize (IH Hx). unfold find_decl in *. simpl in *.
  destruct (String.eqb_spec x y) as [->|Hne].
  - destruct IH as [H|[H _]]; [|discriminate].
    injection H as <-. right. split; auto. eexists; split; [reflexivity|reflexivity].
  - exact IH.
Qed.

Lemma init_store_ok (P : val F -> Prop) G ds arg :
  decls_ok [] ds G ->
  (forall x d j, find_decl ds x = Some d ->
     P (if supplied (qualified ds) d then arg x j else Undef)) ->
  store_ok P G (init_store ds arg).
Proof.
  intros Hds HP x t Hx.
  destruct (decls_lookup _ _ _ _ _ Hds Hx) as [H|[_ [d [Hd Hs]]]]; [discriminate|].
  unfold init_store. rewrite Hd. eexists; split; [reflexivity|]. split; auto.
  intros j _. simpl. specialize (HP x d j Hd). destruct (supplied _ d); auto.
Qed.

Lemma closed_true : closed (fun _ => True).
Proof. repeat split. Qed.

Lemma closed_defined : closed (fun v => v <> Undef).
Proof.
  repeat split; try discriminate;
    intros [] [] [] Ha Hb; unfold binop_den, redop_den, lift; congruence.
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
  - eapply decls_ok_positive; eauto. intros x t H; discriminate.
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
  - eapply decls_ok_positive; eauto. intros x t H; discriminate.
  - apply init_store_ok; auto. intros x d j Hd.
    apply find_some in Hd as [Hin _]. rewrite (Hsup d Hin). auto.
Qed.

End Semantics.
