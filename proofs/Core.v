(** * Core-TeIL (spec/core.md): the desugaring preserves typing and meaning.

    Core-TeIL forms are written in full-TeIL syntax ([is_core]): [transp i (i+1)],
    [red⊙ 1], [diag 1 2], [expa 1 n], [proj 1 m], and no [contr]; the functions, [max]/[min]
    and the conversions are Core-TeIL forms, kept as they are. [desugar] rewrites every
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
  | EVar _ | ELit _ _ => e
  | EParen e => EParen (desugar e)
  | EFunc f e => EFunc f (desugar e)
  | EFunc2 g e0 e1 => EFunc2 g (desugar e0) (desugar e1)
  | EConv τ e => EConv τ (desugar e)
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
  | EVar _ | ELit _ _ => true
  | EParen e | EFunc _ e | EConv _ e => is_core e
  | EBin _ e0 e1 | EProd e0 e1 | EFunc2 _ e0 e1 => is_core e0 && is_core e1
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

Ltac len :=
  repeat first
    [ rewrite length_swap
    | rewrite length_ins by len
    | rewrite length_del by len ]; simpl; lia.

Ltac nths :=
  repeat first
    [ rewrite nth_ins' by len
    | rewrite nth_del'
    | rewrite nth_swap' by len ].

Lemma swap_same p t : p < length t -> swap p p t = t.
Proof.
  intros H. apply list_eq_nth; [len|]. intros m Hm. nths. cases; close.
Qed.

Lemma swap_comm p q t : p < length t -> q < length t -> swap p q t = swap q p t.
Proof.
  intros Hp Hq. apply list_eq_nth; [len|]. intros m Hm. nths. cases; subst; close.
Qed.

(** [transp p q] in Core-TeIL: bring [q] down to [p], then the old [p] (now at [p+1]) up to [q]. *)
Lemma transp_shape p q t :
  p < q -> q < length t -> unmv (S p) (q - p - 1) (mv p (q - p) t) = swap p q t.
Proof.
  intros Hpq Hq. unfold unmv, mv. apply list_eq_nth; [len|].
  intros m Hm. rewrite length_ins, length_del in Hm by len.
  replace (p + (q - p)) with q by lia. replace (S p + (q - p - 1)) with q by lia.
  nths. cases; close.
Qed.

Lemma transp_index p q j :
  p < q -> q < length j -> unmv p (q - p) (mv (S p) (q - p - 1) j) = swap p q j.
Proof.
  intros Hpq Hq. unfold unmv, mv. apply list_eq_nth; [len|].
  intros m Hm. rewrite length_ins, length_del in Hm by len.
  replace (p + (q - p)) with q by lia. replace (S p + (q - p - 1)) with q by lia.
  nths. cases; close.
Qed.

(** ** Typing is preserved *)

Lemma type_transp_adj G e t τ k :
  G ⊢ e ∈ t of τ -> k + 1 < length t ->
  G ⊢ ETransp (S k) (S k + 1) e ∈ swap k (k + 1) t of τ.
Proof.
  intros He Hk. replace (swap k (k + 1) t) with (swap (S k - 1) (S k + 1 - 1) t)
    by (f_equal; lia).
  apply T_Transp; auto; lia.
Qed.

Lemma type_down G e t τ k d :
  G ⊢ e ∈ t of τ -> k + d < length t -> G ⊢ down (S k) d e ∈ mv k d t of τ.
Proof.
  revert e t; induction d as [|d IH]; intros e t He Hl; simpl.
  - rewrite mv_0 by lia. exact He.
  - rewrite <- mv_step by lia. apply IH; [|len].
    replace (S (k + d)) with (S (k + d)) by reflexivity.
    apply (type_transp_adj G e t τ (k + d)); auto; lia.
Qed.

Lemma type_up G e t τ k d :
  G ⊢ e ∈ t of τ -> k + d < length t -> G ⊢ up (S k) d e ∈ unmv k d t of τ.
Proof.
  revert e t; induction d as [|d IH]; intros e t He Hl; simpl.
  - rewrite unmv_0 by lia. exact He.
  - rewrite <- unmv_step by lia. apply (type_transp_adj G _ _ τ (k + d)).
    + apply IH; auto; lia.
    + rewrite length_unmv; lia.
Qed.

Lemma ins_nth_del k s : k < length s -> ins k (nth k s 0) (del k s) = s.
Proof.
  intros H. pose proof (mv_0 k s H) as E. unfold mv in E. rewrite Nat.add_0_r in E. exact E.
Qed.

Lemma type_front G e t τ i :
  G ⊢ e ∈ t of τ -> 1 <= i <= length t -> G ⊢ front i e ∈ nth (i - 1) t 0 :: del (i - 1) t of τ.
Proof. intros He Hi. exact (type_down G e t τ 0 (i - 1) He ltac:(lia)). Qed.

(** The two dimensions of [diag] and [contr], [l < h], brought to the front. *)
Lemma front2_shape t l h :
  1 <= l -> l < h -> h <= length t ->
  nth (l + 1 - 1) (nth (h - 1) t 0 :: del (h - 1) t) 0
    :: del (l + 1 - 1) (nth (h - 1) t 0 :: del (h - 1) t)
  = nth (l - 1) t 0 :: nth (h - 1) t 0 :: del (l - 1) (del (h - 1) t).
Proof.
  intros Hl Hlh Hh. replace (l + 1 - 1) with (S (l - 1)) by lia. simpl.
  rewrite nth_del_lt by lia. reflexivity.
Qed.

Lemma type_front2 G e t τ l h :
  G ⊢ e ∈ t of τ -> 1 <= l -> l < h -> h <= length t ->
  G ⊢ front (l + 1) (front h e)
    ∈ nth (l - 1) t 0 :: nth (h - 1) t 0 :: del (l - 1) (del (h - 1) t) of τ.
Proof.
  intros He Hl Hlh Hh. rewrite <- front2_shape by lia.
  apply type_front; [apply type_front; auto; lia|]. simpl. rewrite length_del; lia.
Qed.

Lemma lo_hi_cases i j : i <> j ->
  (lo i j = i /\ hi i j = j /\ i < j) \/ (lo i j = j /\ hi i j = i /\ j < i).
Proof. unfold lo, hi; lia. Qed.

(** The desugaring preserves types, shapes and element types (spec/core.md: "its statements
    have the same types"). *)
Theorem desugar_typing G e t τ : G ⊢ e ∈ t of τ -> G ⊢ desugar e ∈ t of τ.
Proof.
  induction 1; simpl.
  - apply T_Var; auto.
  - apply T_Paren; auto.
  - apply T_Lit; auto.
  - apply T_Add; auto.
  - apply T_Mul; auto.
  - apply T_Elem; auto.
  - apply T_SMul; auto.
  - apply T_SDiv; auto.
  - apply T_Prod; auto.
  - (* T_Red *)
    change (del (i - 1) t) with (del (1 - 1) (nth (i - 1) t 0 :: del (i - 1) t)).
    apply T_Red; [apply type_front; auto|simpl; lia].
  - (* T_Transp *)
    destruct (Nat.eq_dec i j) as [<-|Hij].
    + unfold lo, hi. rewrite Nat.min_id, Nat.max_id, Nat.sub_diag. simpl.
      rewrite swap_same by lia. auto.
    + assert (Hs : forall p q, p < q -> q < length t ->
                G ⊢ up (S p + 1) (S q - S p - 1) (down (S p) (S q - S p) (desugar e))
                  ∈ swap p q t of τ).
      { intros p q Hpq Hq. rewrite <- transp_shape by lia.
        replace (S p + 1) with (S (S p)) by lia.
        replace (S q - S p - 1) with (q - p - 1) by lia.
        replace (S q - S p) with (q - p) by lia.
        apply type_up; [apply type_down; auto; lia|]. rewrite length_mv; lia. }
      destruct (lo_hi_cases i j Hij) as [[-> [-> Hlt]]|[-> [-> Hlt]]].
      * specialize (Hs (i - 1) (j - 1) ltac:(lia) ltac:(lia)).
        replace (S (i - 1)) with i in Hs by lia. replace (S (j - 1)) with j in Hs by lia.
        exact Hs.
      * specialize (Hs (j - 1) (i - 1) ltac:(lia) ltac:(lia)).
        replace (S (i - 1)) with i in Hs by lia. replace (S (j - 1)) with j in Hs by lia.
        rewrite swap_comm by lia. exact Hs.
  - (* T_Diag *)
    destruct (lo_hi i j H2) as [Hlh Hij].
    assert (Hn : nth (lo i j - 1) t 0 = nth (hi i j - 1) t 0)
      by (destruct Hij as [[-> ->]|[-> ->]]; auto).
    assert (hi i j <= length t /\ 1 <= lo i j) by (destruct Hij as [[-> ->]|[-> ->]]; lia).
    set (l := lo i j) in *. set (h := hi i j) in *.
    rewrite <- (ins_nth_del (l - 1) (del (h - 1) t)) by (rewrite length_del; lia).
    rewrite nth_del_lt by lia.
    change (ins (l - 1) (nth (l - 1) t 0) (del (l - 1) (del (h - 1) t)))
      with (unmv 0 (l - 1) (nth (l - 1) t 0 :: del (l - 1) (del (h - 1) t))).
    unfold back. apply type_up; [|simpl; len].
    change (nth (l - 1) t 0 :: del (l - 1) (del (h - 1) t))
      with (del (hi 1 2 - 1) (nth (l - 1) t 0 :: nth (h - 1) t 0 :: del (l - 1) (del (h - 1) t))).
    apply T_Diag; simpl; auto; try lia.
    apply type_front2; auto; lia.
  - (* T_Contr *)
    destruct (lo_hi i j H2) as [Hlh Hij].
    assert (Hn : nth (lo i j - 1) t 0 = nth (hi i j - 1) t 0)
      by (destruct Hij as [[-> ->]|[-> ->]]; auto).
    assert (hi i j <= length t /\ 1 <= lo i j) by (destruct Hij as [[-> ->]|[-> ->]]; lia).
    set (l := lo i j) in *. set (h := hi i j) in *.
    change (del (l - 1) (del (h - 1) t))
      with (del (1 - 1) (del (hi 1 2 - 1)
              (nth (l - 1) t 0 :: nth (h - 1) t 0 :: del (l - 1) (del (h - 1) t)))).
    apply T_Red; [|simpl; lia].
    apply T_Diag; simpl; auto; try lia.
    apply type_front2; auto; lia.
  - (* T_Expa *)
    change (ins (i - 1) n t) with (unmv 0 (i - 1) (ins (1 - 1) n t)).
    unfold back. apply type_up; [apply T_Expa; auto; simpl; lia|simpl; lia].
  - (* T_Proj *)
    change (del (i - 1) t) with (del (1 - 1) (nth (i - 1) t 0 :: del (i - 1) t)).
    apply T_Proj; [apply type_front; auto|simpl; lia|simpl; lia].
  - apply T_Func; auto.
  - apply T_Func2; auto.
  - apply T_Conv; auto.
Qed.
