(** * Extraction of the checker to OCaml ([extracted/teil_checker.ml]), for the command
    [teil-check] (teil_check.ml) that the differential test runs against the Rust checker.
    [nat] becomes OCaml's [int] and [string] OCaml's [string]; the comparison functions on
    them become OCaml's (ExtrOcamlNatInt, ExtrOcamlNativeString, and the three below). *)

From Coq Require Import Extraction ExtrOcamlBasic ExtrOcamlNatInt ExtrOcamlNativeString.
From Coq Require Import Arith.
From TeIL Require Import Syntax Checker.

Extract Inlined Constant Nat.leb => "(<=)".
Extract Inlined Constant Nat.ltb => "(<)".
Extract Inlined Constant Nat.eq_dec => "(=)".
Extract Inlined Constant Nat.max => "Stdlib.max".
Extract Inlined Constant Nat.min => "Stdlib.min".

From TeIL Require Import Core.

Extraction "extracted/teil_checker.ml" check_prog accepts desugar_prog.
