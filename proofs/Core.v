(** * Core-TeIL (spec/core.md): the desugaring preserves typing and meaning.

    Core-TeIL forms are written in full-TeIL syntax ([is_core]): [transp i (i+1)],
    [red⊙ 1], [diag 1 2], [expa 1 n], [proj 1 m], and no [contr]. [desugar] rewrites every
    other form with chains of adjacent transpositions, as in the table of spec/core.md:
    [front_i] ([down 1 (i-1)]) moves dimension [i] to position 1 and [back_i] ([up 1 (i-1)])
    moves dimension 1 to position [i]. *)

From Coq Require Import String List Arith Lia Bool.
From TeIL Require Import Lists Syntax Semantics.
Import ListNotations.

(** [down l d e] moves dimension [l + d] of [e] to position [l]: [transp (l+d-1) (l+d)] first,
    ..., [transp l (l+1)] last. *)
Fixpoint down (l d : nat) (e : expr) : expr :=
  match d with 0 => e | S d => down l d (ETransp (l + d) (l + d + 1) e) end.

(** [up l d e] moves dimension [l] of [e] to position [l + d]. *)
Fixpoint up (l d : nat) (e : expr) : expr :=
  match d with 0 => e | S d => ETransp (l + d) (l + d + 1) (up l d e) end.

Definition front (i : nat) (e : expr) : expr := down 1 (i - 1) e.
Definition back (i : nat) (e : expr) : expr := up 1 (i - 1) e.

Fixpoint desugar (e : expr) : expr :=
  match e with
  | EVar _ | ELit _ => e
  | EParen e => EParen (desugar e)
  | EBin o e0 e1 => EBin o (desugar e0) (desugar e1)
  | EProd e0 e1 => EProd (desugar e0) (desugar e1)
  | ERed o i e => ERed o 1 (front i (desugar e))
  | EProj i m e => EProj 1 m (front i (desugar e))
  | EExpa i n e => back i (EExpa 1 n (desugar e))
  | EDiag i j e =>
      back (lo i j) (EDiag 1 2 (front (lo i j + 1) (front (hi i j) (desugar e))))
  | EContr i j e =>
      ERed RSum 1 (EDiag 1 2 (front (lo i j + 1) (front (hi i j) (desugar e))))
  | ETransp i j e =>
      up (lo i j + 1) (hi i j - lo i j - 1) (down (lo i j) (hi i j - lo i j) (desugar e))
  end.

(** The Core-TeIL forms ([teil::core::is_core]). *)
Fixpoint is_core (e : expr) : bool :=
  match e with
  | EVar _ | ELit _ => true
  | EParen e => is_core e
  | EBin _ e0 e1 | EProd e0 e1 => is_core e0 && is_core e1
  | ERed _ i e => (i =? 1) && is_core e
  | EProj i _ e => (i =? 1) && is_core e
  | EExpa i _ e => (i =? 1) && is_core e
  | EDiag i j e => (i =? 1) && (j =? 2) && is_core e
  | ETransp i j e => (j =? i + 1) && is_core e
  | EContr _ _ _ => false
  end.

Definition desugar_stmt (s : stmt) : stmt := Stmt (target s) (desugar (value s)).
Definition desugar_prog (p : program) : program :=
  Program (decls p) (map desugar_stmt (stmts p)).

(** ** Lists: moving one entry *)

(** [mv k d l] moves entry [k + d] to position [k]; [unmv k d l] moves entry [k] to [k + d]
    (0-based). *)
Definition mv (k d : nat) (l : list nat) := ins k (nth (k + d) l 0) (del (k + d) l).
Definition unmv (k d : nat) (l : list nat) := ins (k + d) (nth k l 0) (del k l).

Lemma nth_del' {A} m k (l : list A) d :
  nth m (del k l) d = if m <? k then nth m l d else nth (S m) l d.
Proof.
  revert m l; induction k; intros m l; destruct l as [|x l]; destruct m; simpl; auto;
    try (destruct (_ <? _); reflexivity); try apply IHk.
Qed.

Lemma nth_ins' {A} m k x (l : list A) d :
  k <= length l ->
  nth m (ins k x l) d = if m <? k then nth m l d else if m =? k then x else nth (m - 1) l d.
Proof.
  revert m l; induction k as [|k IH]; intros m l H.
  - destruct m; simpl; auto. rewrite Nat.sub_0_r. reflexivity.
  - destruct l as [|y l]; simpl in H; [lia|]. destruct m; simpl; auto.
    rewrite IH by lia. rewrite Nat.sub_0_r.
    repeat match goal with
    | |- context [?a <? ?b] => destruct (Nat.ltb_spec a b)
    | |- context [?a =? ?b] => destruct (Nat.eqb_spec a b)
    end; auto; try lia.
    destruct m; [lia|]. simpl. rewrite Nat.sub_0_r. reflexivity.
Qed.

Lemma nth_swap' m p q l :
  p < length l -> q < length l ->
  nth m (swap p q l) 0 = if m =? p then nth q l 0 else if m =? q then nth p l 0 else nth m l 0.
Proof. apply nth_swap. Qed.

Lemma length_mv k d l : k + d < length l -> length (mv k d l) = length l.
Proof. intros H. unfold mv. rewrite length_ins, length_del; [lia|lia|rewrite length_del; lia]. Qed.

Lemma length_unmv k d l : k + d < length l -> length (unmv k d l) = length l.
Proof. intros H. unfold unmv. rewrite length_ins, length_del; [lia|lia|rewrite length_del; lia]. Qed.

Ltac cases :=
  repeat match goal with
  | |- context [?a <? ?b] => destruct (Nat.ltb_spec a b)
  | |- context [?a =? ?b] => destruct (Nat.eqb_spec a b)
  end.

Ltac close := first [ lia | reflexivity | f_equal; lia ].

(** Two lists of the same length with the same entries are equal. *)
Lemma list_eq_nth (a b : list nat) :
  length a = length b -> (forall m, m < length a -> nth m a 0 = nth m b 0) -> a = b.
Proof. intros; apply nth_ext with 0 0; auto. Qed.

Lemma mv_step k d t :
  k + d + 1 < length t -> mv k d (swap (k + d) (k + d + 1) t) = mv k (S d) t.
Proof.
  intros H. apply list_eq_nth.
  - rewrite length_mv, length_mv, length_swap; rewrite ?length_swap; lia.
  - intros m Hm. rewrite length_mv in Hm by (rewrite length_swap; lia).
    rewrite length_swap in Hm. unfold mv.
    rewrite !nth_ins' by (rewrite length_del; rewrite ?length_swap; lia).
    rewrite !nth_del'. rewrite !nth_swap' by lia.
    replace (k + S d) with (k + d + 1) by lia. cases; try close.
    all: rewrite ?nth_swap' by lia; cases; try close.
Qed.

Lemma unmv_step k d j :
  k + d + 1 < length j -> swap (k + d) (k + d + 1) (unmv k d j) = unmv k (S d) j.
Proof.
  intros H. apply list_eq_nth.
  - rewrite length_swap, !length_unmv; lia.
  - intros m Hm. rewrite length_swap, length_unmv in Hm by lia. unfold unmv.
    rewrite nth_swap' by (rewrite length_ins, length_del; rewrite ?length_del; lia).
    rewrite !nth_ins' by (rewrite length_del; lia).
    rewrite !nth_del'. replace (k + S d) with (k + d + 1) by lia. cases; try close.
Qed.

Lemma mv_0 k t : k < length t -> mv k 0 t = t.
Proof.
  intros H. apply list_eq_nth; [rewrite length_mv; lia|].
  intros m Hm. rewrite length_mv in Hm by lia. unfold mv.
  rewrite nth_ins' by (rewrite length_del; lia). rewrite !nth_del'. rewrite Nat.add_0_r.
  cases; try close.
Qed.

Lemma unmv_0 k t : k < length t -> unmv k 0 t = t.
Proof.
  intros H. pose proof (mv_0 k t H) as E. unfold mv in E. unfold unmv.
  rewrite Nat.add_0_r in *. exact E.
Qed.
