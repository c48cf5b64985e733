(** * Extraction of the checker to OCaml ([extracted/teil_checker.ml]), for the command
    [teil-check] (teil_check.ml) that the differential test runs against the Rust checker.
    [nat] becomes Zarith's arbitrary-precision integers ([Big_int_Z.big_int], which is
    [Z.t]; ExtrOcamlNatBigInt) and [string] OCaml's [string] (ExtrOcamlNativeString); the
    comparisons on [nat] become Zarith's (ExtrOcamlNatBigInt, and the five below).

    Not OCaml's [int]: extents and positions are 64-bit in the AST (spec/limits.md, E0003), and
    an [int] holds only 63 bits, so two different extents above 2^62 could not be told apart.
    With [Z.t] every natural the AST can carry is exact. *)

From Coq Require Import Extraction ExtrOcamlBasic ExtrOcamlNatBigInt ExtrOcamlNativeString.
From Coq Require Import Arith.
From TeIL Require Import Syntax Checker.

Extract Inlined Constant Nat.leb => "Big_int_Z.le_big_int".
Extract Inlined Constant Nat.ltb => "Big_int_Z.lt_big_int".
Extract Inlined Constant Nat.eq_dec => "Big_int_Z.eq_big_int".
Extract Inlined Constant Nat.max => "Big_int_Z.max_big_int".
Extract Inlined Constant Nat.min => "Big_int_Z.min_big_int".

From TeIL Require Import Core.

Extraction "extracted/teil_checker.ml" check_prog accepts desugar_prog.
