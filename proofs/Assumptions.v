(** The main theorems and what they rest on. [check-assumptions] compiles this file and fails
    unless every answer is "Closed under the global context" or names only axioms listed in
    [assumptions.allow] (empty: no axiom is allowed). *)

From TeIL Require Import Lists Syntax Semantics Checker Reads Core CoreSem.

Print Assumptions has_type_det.
Print Assumptions has_type_lits_fit.
Print Assumptions flexible_retype.
Print Assumptions sem_safe.
Print Assumptions reads_in_bounds.
Print Assumptions stmt_reads_in_bounds.
Print Assumptions stmt_safe.
Print Assumptions stmts_safe.
Print Assumptions prog_safe.
Print Assumptions prog_no_undef.
Print Assumptions infer_sound.
Print Assumptions infer_complete.
Print Assumptions infer_err.
Print Assumptions infer_correct.
Print Assumptions check_stmt_correct.
Print Assumptions check_stmt_ok.
Print Assumptions check_decls_correct.
Print Assumptions check_decls_err.
Print Assumptions accepts_correct.
Print Assumptions check_prog_shapes.
Print Assumptions desugar_typing.
Print Assumptions desugar_is_core.
Print Assumptions desugar_prog_ok.
Print Assumptions desugar_sem.
Print Assumptions sem_agree.
Print Assumptions desugar_run.
