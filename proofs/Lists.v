(** * Lists: the list operations of spec/typing.md and spec/semantics.md, proved once.

    Positions in the spec are 1-based; the operations here take the 0-based position
    [k = i - 1], and the typing rules and equations apply them to [i - 1].
    - [del k l]: [l \ (k+1)] on types, [del_{k+1}] on multi-indices;
    - [ins k x l]: [ins_{k+1}(l, x)];
    - [swap p q l]: [swap_{p+1,q+1}(l)].
    A multi-index [j] is in the index set [I(t)] of a type [t] when [inb j t]: both lists have
    the same length and [1 <= j_l <= n_l] componentwise (spec/semantics.md, "Notation"). *)

From Coq Require Import List Arith Lia Bool.
Import ListNotations.

Fixpoint del {A} (k : nat) (l : list A) : list A :=
  match k, l with
  | _, [] => []
  | 0, _ :: t => t
  | S k, x :: t => x :: del k t
  end.

Fixpoint ins {A} (k : nat) (x : A) (l : list A) : list A :=
  match k, l with
  | 0, _ => x :: l
  | S _, [] => [x]
  | S k, y :: t => y :: ins k x t
  end.

Fixpoint upd {A} (k : nat) (x : A) (l : list A) : list A :=
  match k, l with
  | _, [] => []
  | 0, _ :: t => x :: t
  | S k, y :: t => y :: upd k x t
  end.

Definition swap (p q : nat) (l : list nat) : list nat :=
  upd p (nth q l 0) (upd q (nth p l 0) l).

(** The index set [I(t)]. *)
Definition inb (j t : list nat) : Prop := Forall2 (fun a n => 1 <= a <= n) j t.

(** Positive extents: types are lists of positive naturals (S-Var, report Def. 2). *)
Definition positive (t : list nat) : Prop := Forall (fun n => 1 <= n) t.

Lemma length_del {A} k (l : list A) : k < length l -> length (del k l) = length l - 1.
Proof.
  revert l; induction k; intros [|x l] H; simpl in *; try lia.
  rewrite IHk by lia. lia.
Qed.

Lemma length_ins {A} k (x : A) l : k <= length l -> length (ins k x l) = S (length l).
Proof.
  revert l; induction k; intros [|y l] H; simpl in *; try lia.
  rewrite IHk by lia. lia.
Qed.

Lemma length_upd {A} k (x : A) l : length (upd k x l) = length l.
Proof. revert l; induction k; intros [|y l]; simpl; auto. Qed.

Lemma length_swap p q l : length (swap p q l) = length l.
Proof. unfold swap. now rewrite !length_upd. Qed.

Lemma nth_upd {A} k p (x : A) l d :
  p < length l -> nth k (upd p x l) d = if k =? p then x else nth k l d.
Proof.
  revert k l; induction p; intros [|k] [|y l] H; simpl in *; try lia; auto.
  apply IHp. lia.
Qed.

Lemma nth_swap k p q l :
  p < length l -> q < length l ->
  nth k (swap p q l) 0 =
  if k =? p then nth q l 0 else if k =? q then nth p l 0 else nth k l 0.
Proof.
  intros Hp Hq. unfold swap.
  rewrite nth_upd by (rewrite length_upd; lia).
  rewrite nth_upd by lia. reflexivity.
Qed.

Lemma nth_del_lt {A} k h (l : list A) d : k < h -> nth k (del h l) d = nth k l d.
Proof.
  revert k l; induction h; intros [|k] [|x l] H; simpl; try lia; auto.
  apply IHh. lia.
Qed.

Lemma inb_length j t : inb j t -> length j = length t.
Proof. induction 1; simpl; auto. Qed.

Lemma inb_nth j t k : inb j t -> k < length t -> 1 <= nth k j 0 <= nth k t 0.
Proof.
  intros H; revert k; induction H; intros [|k] Hk; simpl in *; try lia; auto.
  apply IHForall2. lia.
Qed.

Lemma inb_of_nth j t :
  length j = length t -> (forall k, k < length t -> 1 <= nth k j 0 <= nth k t 0) -> inb j t.
Proof.
  revert t; induction j as [|a j IH]; intros [|n t] Hl Hk; simpl in *; try lia.
  - constructor.
  - constructor.
    + apply (Hk 0). lia.
    + apply IH; [lia|]. intros k Hk'. apply (Hk (S k)). lia.
Qed.

(** [ins_p] after [\ p] is back in the index set: the reads of [S-Red], [S-Proj], [S-Diag],
    [S-Contr]. *)
Lemma inb_ins k j t v :
  inb j (del k t) -> k < length t -> 1 <= v <= nth k t 0 -> inb (ins k v j) t.
Proof.
  revert j t; induction k; intros j [|n t] Hj Hk Hv; simpl in *; try lia.
  - constructor; auto.
  - inversion Hj; subst. simpl. constructor; auto. apply IHk; auto. lia.
Qed.

(** [del_p] after [ins_p] is back in the index set: the read of [S-Expa]. *)
Lemma inb_del k j t n : inb j (ins k n t) -> k <= length t -> inb (del k j) t.
Proof.
  revert j t; induction k; intros j [|m t] Hj Hk; simpl in *; try lia.
  - inversion Hj; subst; simpl; auto.
  - inversion Hj; subst; simpl; auto.
  - inversion Hj; subst. simpl. constructor; auto. apply IHk; auto. lia.
Qed.

(** [swap] is its own inverse on index sets: the read of [S-Transp]. *)
Lemma inb_swap p q j t :
  p < length t -> q < length t -> inb j (swap p q t) -> inb (swap p q j) t.
Proof.
  intros Hp Hq Hj.
  pose proof (inb_length _ _ Hj) as Hl. rewrite length_swap in Hl.
  apply inb_of_nth; [now rewrite length_swap|].
  intros k Hk.
  rewrite nth_swap by lia.
  assert (forall m, m < length t -> 1 <= nth m j 0 <= nth m (swap p q t) 0) as Hm
    by (intros m Hm; apply inb_nth; auto; now rewrite length_swap).
  pose proof (Hm p Hp) as Hp'. pose proof (Hm q Hq) as Hq'. pose proof (Hm k Hk) as Hk'.
  rewrite nth_swap in Hp', Hq', Hk' by lia.
  rewrite Nat.eqb_refl in Hp', Hq'. revert Hp' Hq' Hk'.
  destruct (Nat.eqb_spec k p), (Nat.eqb_spec k q), (Nat.eqb_spec q p); subst; intros; lia.
Qed.

(** A multi-index of [t0 ++ t1] splits in two: the reads of [S-Prod]. *)
Lemma inb_app j t0 t1 :
  inb j (t0 ++ t1) -> inb (firstn (length t0) j) t0 /\ inb (skipn (length t0) j) t1.
Proof.
  revert j; induction t0 as [|n t0 IH]; intros j Hj; simpl in *.
  - split; [destruct j; constructor|exact Hj].
  - inversion Hj; subst. simpl. destruct (IH _ H3). split; auto. constructor; auto.
Qed.

Lemma inb_nil j : inb j [] -> j = [].
Proof. intros H. inversion H; auto. Qed.

(** Positive extents are kept by every operation on types. *)
Lemma positive_del k t : positive t -> positive (del k t).
Proof.
  revert t; induction k; intros [|n t] H; simpl; auto; inversion H; subst; auto.
  constructor; auto. apply IHk; auto.
Qed.

Lemma positive_ins k n t : positive t -> 1 <= n -> positive (ins k n t).
Proof.
  revert t; induction k; intros [|m t] H Hn; simpl; try (constructor; auto; fail).
  inversion H; subst. constructor; auto. apply IHk; auto.
Qed.

Lemma positive_nth k t : positive t -> k < length t -> 1 <= nth k t 0.
Proof.
  revert t; induction k; intros [|n t] H Hk; simpl in *; try lia; inversion H; subst; auto.
  apply IHk; auto; lia.
Qed.

Lemma positive_swap p q t : p < length t -> q < length t -> positive t -> positive (swap p q t).
Proof.
  intros Hp Hq H. unfold positive. apply Forall_nth. intros k d Hk.
  rewrite length_swap in Hk. rewrite nth_indep with (d' := 0) by (now rewrite length_swap).
  rewrite nth_swap by lia.
  destruct (k =? p), (k =? q); apply positive_nth; auto.
Qed.

Lemma positive_app a b : positive a -> positive b -> positive (a ++ b).
Proof. intros. apply Forall_app; auto. Qed.
