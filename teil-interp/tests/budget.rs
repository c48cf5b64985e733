//! The evaluation budgets (spec/limits.md, "Evaluation budgets"): exact estimates on small
//! programs, refusal before anything is allocated or evaluated, cancellation from another
//! thread, and fallible allocation.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use teil::Code;
use teil::CodedError;
use teil_interp::budget::{
    cell_work, fast_bytes, oracle_bytes, oracle_work, statement_work, Budget,
};
use teil_interp::oracle::Oracle;
use teil_interp::{initial_store, run_fast_with, run_oracle_with, RunError, Tensor};

fn compile(src: &str) -> teil::CheckedProgram {
    teil::compile(src).expect("test program checks").0
}

fn inputs(p: &teil::CheckedProgram) -> BTreeMap<String, Tensor> {
    teil_interp::random_inputs(p, 1)
}

/// The oracle's work is exactly the number of `eval` calls it makes.
#[test]
fn oracle_work_is_exact() {
    let cases = [
        // One cell, one read: s = A[] is 1 step.
        ("alloc A : []\nalloc s : []\ns = A", 1),
        // C = (A # B) .[2 3], A : [2 3], B : [3 4]: per cell 1 (contr) + 3 · (1 (paren) +
        // 1 (prod) + 1 (A) + 1 (B)) = 13 steps, 8 cells.
        (
            "var A : [2 3]\nvar B : [3 4]\nvar C : [2 4]\nC = (A # B) .[2 3]",
            8 * 13,
        ),
        // red+ 1 (expa 1 1000 A) on A : [10]: per cell 1 + 1000 · (1 (paren) + 1 (expa) + 1)
        // = 3001.
        (
            "alloc A : [10]\nalloc B : [10]\nB = red+ 1 (expa 1 1000 A)",
            10 * 3001,
        ),
        // Two statements add up; parentheses are a step each.
        (
            "alloc A : [3]\nalloc B : [3]\nB = (A + A)\nA = 2 * B",
            3 * 4 + 3 * 3,
        ),
    ];
    for (src, want) in cases {
        let p = compile(src);
        assert_eq!(oracle_work(&p), want, "{src}");
        let mut o = Oracle::with_budget(
            &p,
            initial_store(&p, &inputs(&p)).unwrap(),
            Budget::unlimited(),
        );
        o.run().unwrap();
        assert_eq!(o.steps(), want, "the meter of {src}");
    }
    let p = compile("alloc A : [10]\nalloc B : [10]\nB = red+ 1 (expa 1 1000 A)");
    let s = &p.program().stmts[0];
    assert_eq!(cell_work(&p, &s.value), 3001);
    assert_eq!(statement_work(&p, s), 30010);
}

/// Four nested `red+ 1 (expa 1 1000 ...)`: 10^13 steps, refused at once; the work saturates
/// instead of overflowing for deeper towers.
#[test]
fn nested_expansions_are_refused_before_running() {
    let mut e = "A".to_string();
    for _ in 0..4 {
        e = format!("red+ 1 (expa 1 1000 ({e}))");
    }
    let p = compile(&format!("alloc A : [10]\nalloc B : [10]\nB = {e}"));
    // Per cell: each level is 1 (red+) + 1000 · (1 (paren) + 1 (expa) + 1 (paren) + inner).
    let mut per_cell = 1u64;
    for _ in 0..4 {
        per_cell = 1 + 1000 * (3 + per_cell);
    }
    assert_eq!(oracle_work(&p), 10 * per_cell);
    let start = std::time::Instant::now();
    let err = run_oracle_with(&p, &inputs(&p), &Budget::default()).unwrap_err();
    assert_eq!(err.code(), Some(Code::WorkBudget), "{err}");
    assert!(start.elapsed().as_secs() < 5);
    // The fast evaluator shares the sub-results: 10 · 1000^4 = 10^13 times A.
    let fast = run_fast_with(&p, &inputs(&p), &Budget::default()).unwrap();
    let a = &inputs(&p)["A"];
    assert_eq!(fast["B"], a * 1e12);
    let mut deep = "A".to_string();
    for _ in 0..30 {
        deep = format!("red+ 1 (expa 1 1000 ({deep}))");
    }
    let p = compile(&format!("alloc A : [10]\nalloc B : [10]\nB = {deep}"));
    assert_eq!(oracle_work(&p), u64::MAX);
}

/// The memory estimates, in bytes, on a small program.
#[test]
fn memory_estimates_are_exact_on_small_programs() {
    // A : [2 3] input, B : [3 4] input, C : [2 4], T : [2 4].
    let p = compile(
        "input var A : [2 3]\ninput var B : [3 4]\noutput var C : [2 4]\nvar T : [2 4]\n\
         T = (A # B) .[2 3]\nC = T + T / T",
    );
    let cells = 6 + 12 + 8 + 8;
    // Fast: the store (f64) and the inputs' copies, then the statement materialising most:
    // `T + T / T` is its value (8), `T + ...`'s result (8) and operands T (8) and T / T (8, with
    // its result 8 and operands 8 + 8): 56 cells.
    let est = fast_bytes(&p);
    assert_eq!(est.bytes, 8 * (cells + 6 + 12) + 8 * 56);
    assert_eq!(est.largest_cells, 12);
    assert_eq!(est.largest, "`B`");
    // Oracle: the store (Val, 16 bytes) and the inputs, then the larger of the statement
    // buffer (8 Val) and the results (every variable as f64).
    let est = oracle_bytes(&p);
    assert_eq!(est.bytes, 16 * cells + 8 * (6 + 12) + 8 * cells);
}

/// Report Fig. 6 checks, and both evaluators refuse it before allocating: 7.2 · 10^12 cells.
#[test]
fn report_fig06_is_refused_by_the_memory_budget() {
    let p = compile("var u : [200 300 400 500 600]\nvar v : [200 500 400 300 600]\nv = u ^ [2 4]");
    let budget = Budget {
        max_memory: 1 << 40,
        ..Budget::default()
    };
    for err in [
        run_fast_with(&p, &BTreeMap::new(), &budget).unwrap_err(),
        run_oracle_with(&p, &BTreeMap::new(), &budget).unwrap_err(),
    ] {
        assert_eq!(err.code(), Some(Code::MemoryBudget), "{err}");
        match &err {
            RunError::OverMemory {
                largest_cells,
                largest,
                ..
            } => {
                assert_eq!(*largest_cells, 7_200_000_000_000);
                assert!(largest == "`u`" || largest == "`v`", "{largest}");
            }
            e => panic!("{e}"),
        }
    }
}

/// Intermediates the estimate does not see are checked when they are allocated.
#[test]
fn intermediates_are_checked_against_the_budget_when_allocated() {
    // red* materialises its operand, the product A # A of 10^6 cells (8 MB).
    let p = compile("alloc A : [1000]\nalloc s : [1000]\ns = red* 2 (A # A)");
    let ok = run_fast_with(&p, &inputs(&p), &Budget::default()).unwrap();
    assert_eq!(ok["s"].len(), 1000);
    let store = 8 * 2000;
    let tight = Budget {
        max_memory: store + 8 * 1000 * 1000 - 1,
        ..Budget::default()
    };
    let err = run_fast_with(&p, &inputs(&p), &tight).unwrap_err();
    assert_eq!(err.code(), Some(Code::MemoryBudget), "{err}");
}

/// A run is cancelled from another thread: the flag is polled while the oracle works, and the
/// run ends with `Interrupted` long before it would have finished.
#[test]
fn a_flag_set_from_another_thread_interrupts_the_oracle() {
    // 10^9 steps: minutes of work without the flag.
    let mut e = "A".to_string();
    for _ in 0..3 {
        e = format!("red+ 1 (expa 1 1000 ({e}))");
    }
    let p = compile(&format!("alloc A : [1]\nalloc B : [1]\nB = {e}"));
    let flag = Arc::new(AtomicBool::new(false));
    let budget = Budget::unlimited().with_cancel(flag.clone());
    let setter = {
        let flag = flag.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            flag.store(true, Ordering::Relaxed);
        })
    };
    let start = std::time::Instant::now();
    let err = run_oracle_with(&p, &inputs(&p), &budget).unwrap_err();
    setter.join().unwrap();
    assert_eq!(err, RunError::Interrupted);
    assert_eq!(err.code(), Some(Code::Interrupted));
    assert!(start.elapsed().as_secs() < 5);
}

/// The fast evaluator polls the flag inside a contraction: a 2500^3 matrix product (seconds
/// of work) stops soon after the flag is set.
#[test]
fn a_flag_set_from_another_thread_interrupts_a_contraction() {
    let p = compile(
        "var A : [2500 2500]\nvar B : [2500 2500]\nvar C : [2500 2500]\nC = (A # B) .[2 3]",
    );
    let inputs = inputs(&p);
    let flag = Arc::new(AtomicBool::new(false));
    let budget = Budget::default().with_cancel(flag.clone());
    let setter = {
        let flag = flag.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            flag.store(true, Ordering::Relaxed);
        })
    };
    let start = std::time::Instant::now();
    let err = run_fast_with(&p, &inputs, &budget).unwrap_err();
    let took = start.elapsed();
    setter.join().unwrap();
    assert_eq!(err, RunError::Interrupted);
    assert!(took.as_millis() < 2000, "{took:?}");
}

#[test]
fn a_flag_set_before_the_run_stops_the_fast_evaluator_and_trace() {
    let p = compile("alloc A : [4]\nalloc B : [4]\nB = A + A");
    let flag = Arc::new(AtomicBool::new(true));
    let budget = Budget::default().with_cancel(flag);
    assert_eq!(
        run_fast_with(&p, &inputs(&p), &budget).unwrap_err(),
        RunError::Interrupted
    );
    let err = teil_interp::trace::trace(&p, "B", &[1], None, teil::fmt::Style::Prefix, &budget)
        .unwrap_err();
    assert_eq!(err.to_string(), "interrupted");
}

/// Allocation failures are errors: a tensor that cannot be addressed, or reserved.
#[test]
fn allocation_failure_is_an_error_not_an_abort() {
    let p = compile("alloc A : [4294967296, 1073741824]\nalloc s : []\ns = red+ 1 (red+ 1 A)");
    let unlimited = Budget::unlimited();
    let err = run_fast_with(&p, &BTreeMap::new(), &unlimited).unwrap_err();
    assert_eq!(err.code(), Some(Code::OutOfMemory), "{err}");
    let err = run_oracle_with(&p, &BTreeMap::new(), &unlimited).unwrap_err();
    assert_eq!(err.code(), Some(Code::OutOfMemory), "{err}");
    let err =
        teil_interp::try_random_inputs(&compile("input alloc A : [4294967296, 1073741824]"), 1)
            .unwrap_err();
    assert_eq!(err.code(), Some(Code::OutOfMemory), "{err}");
}
