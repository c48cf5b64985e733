//! The equational laws of the TeIL paper §3.6 and §4 as property tests, through both
//! evaluators: each law's two sides are appended as statements `L = ...` and `R = ...` to a
//! random well-typed program, over the right-hand side `E` of its last statement, and must
//! agree exactly (small integer inputs, no division: nothing rounds).

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use std::collections::BTreeMap;
use teil::ast::{Program, ShapeDisplay};
use teil::fmt::{self, Style};
use teil_fuzz::gen::{program, GenConfig};
use teil_interp::{random_inputs, run_fast, run_oracle, same_values, Tensor};

fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x1a35),
        failure_persistence: None,
        ..Config::default()
    }
}

fn gen() -> impl Strategy<Value = Program> {
    program(GenConfig {
        max_rank: 2,
        max_depth: 3,
        max_stmts: 2,
        ..GenConfig::default()
    })
}

/// Both evaluators' final stores.
fn both(p: &teil::CheckedProgram, seed: u64) -> [BTreeMap<String, Tensor>; 2] {
    let inputs = random_inputs(p, seed);
    [
        run_oracle(p, &inputs).expect("oracle"),
        run_fast(p, &inputs).expect("fast"),
    ]
}

/// `p` plus `L : shape = lhs` and `R : shape = rhs`, where `E` in `lhs`/`rhs` stands for the
/// right-hand side of `p`'s last statement. Returns the checked program.
fn with_law(p: &Program, shape: &[u64], lhs: &str, rhs: &str) -> teil::CheckedProgram {
    let e = format!(
        "({})",
        fmt::expr(&p.stmts.last().expect("a statement").value, Style::Prefix)
    );
    let mut text = String::new();
    for d in &p.decls {
        text.push_str(&fmt::decl(d, Style::Prefix));
        text.push('\n');
    }
    let extents = ShapeDisplay(shape).to_string();
    text.push_str(&format!("alloc L : {extents}\nalloc R : {extents}\n"));
    for s in &p.stmts {
        text.push_str(&format!(
            "{} = {}\n",
            s.target.name,
            fmt::expr(&s.value, Style::Prefix)
        ));
    }
    text.push_str(&format!(
        "L = {}\nR = {}\n",
        lhs.replace('E', &e),
        rhs.replace('E', &e)
    ));
    match teil::compile(&text) {
        Ok((c, _)) => c,
        Err(d) => panic!("law program does not check:\n{text}\n{d:#?}"),
    }
}

fn last_shape(p: &Program) -> Vec<u64> {
    let (c, _) = teil::check(p.clone()).expect("generated programs are well-typed");
    c.shape(&c.program().stmts.last().unwrap().value).to_vec()
}

fn sides_agree(c: &teil::CheckedProgram, seed: u64) -> Result<(), TestCaseError> {
    for out in both(c, seed) {
        prop_assert!(
            same_values(&out["L"], &out["R"]),
            "L and R differ\n{}\nL = {}\nR = {}",
            fmt::program(c.program(), Style::Prefix),
            out["L"],
            out["R"]
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(200))]

    /// (3) proj i m (expa i n e) ≅ e
    #[test]
    fn proj_is_left_inverse_of_expa(p in gen(), i in 0usize..8, n in 1u64..=3, m in 1u64..=3, seed in any::<u64>()) {
        let s = last_shape(&p);
        let i = 1 + i % (s.len() + 1);
        let m = 1 + (m - 1) % n;
        let c = with_law(&p, &s, &format!("proj {i} {m} (expa {i} {n} E)"), "E");
        sides_agree(&c, seed)?;
    }

    /// (4) diag i0 i1 (transp i0 i1 e) ≅ diag i0 i1 e, on e = prod E E (equal extents at i, r+i)
    #[test]
    fn diag_ignores_transposition_of_its_dimensions(p in gen(), i in 0usize..8, flip in any::<bool>(), seed in any::<u64>()) {
        let s = last_shape(&p);
        prop_assume!(!s.is_empty());
        let r = s.len();
        let i = 1 + i % r;
        let (i0, i1) = if flip { (r + i, i) } else { (i, r + i) };
        let mut shape = s.clone();
        shape.extend(s.iter().copied());
        shape.remove(i0.max(i1) - 1);
        let c = with_law(&p, &shape, &format!("diag {i0} {i1} (transp {i0} {i1} (prod E E))"), &format!("diag {i0} {i1} (prod E E)"));
        sides_agree(&c, seed)?;
    }

    /// (5) red+ i (expa i n e) ≅ n · e
    #[test]
    fn sum_over_an_expansion_is_a_multiple(p in gen(), i in 0usize..8, n in 1u64..=4, seed in any::<u64>()) {
        let s = last_shape(&p);
        let i = 1 + i % (s.len() + 1);
        let c = with_law(&p, &s, &format!("red+ {i} (expa {i} {n} E)"), &format!("mul {n} E"));
        sides_agree(&c, seed)?;
    }

    /// (6) contr i j e := red+ min(i,j) (diag i j e), either order of the positions
    #[test]
    fn contraction_is_sum_of_diagonal(p in gen(), i in 0usize..8, flip in any::<bool>(), seed in any::<u64>()) {
        let s = last_shape(&p);
        prop_assume!(!s.is_empty());
        let r = s.len();
        let i = 1 + i % r;
        let (i0, i1) = if flip { (r + i, i) } else { (i, r + i) };
        let mut shape = s.clone();
        shape.extend(s.iter().copied());
        shape.remove(r + i - 1);
        shape.remove(i - 1);
        let c = with_law(&p, &shape, &format!("contr {i0} {i1} (prod E E)"), &format!("red+ {i} (diag {i0} {i1} (prod E E))"));
        sides_agree(&c, seed)?;
    }

    /// The infix forms mean their prefix forms: a program printed in either syntax evaluates
    /// to the same store.
    #[test]
    fn infix_and_prefix_syntax_agree(p in gen(), seed in any::<u64>()) {
        let prefix = teil::compile(&fmt::program(&p, Style::Prefix)).expect("prefix text checks").0;
        let infix = teil::compile(&fmt::program(&p, Style::Infix)).expect("infix text checks").0;
        let [a, b] = [both(&prefix, seed), both(&infix, seed)];
        for (x, y) in a.iter().zip(&b) {
            for (name, v) in x {
                prop_assert!(same_values(v, &y[name]), "`{}` differs between the syntaxes", name);
            }
        }
    }

    /// Core-TeIL (§4): the desugared program evaluates to the same store.
    #[test]
    fn core_desugaring_preserves_the_store(p in gen(), seed in any::<u64>()) {
        let (c, _) = teil::check(p).expect("well-typed");
        let core = teil::core::desugar(&c).expect("desugars");
        prop_assert!(teil::core::is_core(&core));
        let (core, _) = teil::check(core).expect("the Core-TeIL form is well-typed");
        let [a, b] = [both(&c, seed), both(&core, seed)];
        for (x, y) in a.iter().zip(&b) {
            for (name, v) in x {
                prop_assert!(same_values(v, &y[name]), "`{}` differs after desugaring", name);
            }
        }
    }
}

#[test]
fn infix_contraction_is_prefix_contraction() {
    let a = ndarray::arr2(&[[1.0, 2.0], [3.0, 4.0]]).into_dyn();
    let b = ndarray::arr2(&[[0.0, 1.0], [-1.0, 2.0]]).into_dyn();
    let inputs: BTreeMap<String, Tensor> = [("A".to_string(), a), ("B".to_string(), b)].into();
    let infix = teil::compile("var A : [2 2]\nvar B : [2 2]\nvar C : [2 2]\nC = (A # B) .[2 3]")
        .unwrap()
        .0;
    let prefix = teil::compile(
        "alloc A : [2, 2]\nalloc B : [2, 2]\nalloc C : [2, 2]\nC = contr 2 3 (prod A B)",
    )
    .unwrap()
    .0;
    // By hand: [[1·0 + 2·(-1), 1·1 + 2·2], [3·0 + 4·(-1), 3·1 + 4·2]].
    let want = ndarray::arr2(&[[-2.0, 5.0], [-4.0, 11.0]]).into_dyn();
    for p in [&infix, &prefix] {
        assert!(same_values(&run_oracle(p, &inputs).unwrap()["C"], &want));
        assert!(same_values(&run_fast(p, &inputs).unwrap()["C"], &want));
    }
}
