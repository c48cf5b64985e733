//! Dot products in lanes (spec/padding.md, "Dot products in lanes"; `ir::Strategy::LaneSums`):
//! a contraction whose terms are rows of every operand (a matrix-vector product, a batched
//! one, row sums, sums of row products), of at least `opt::lanes::MIN_SUM_TERMS` terms, in a
//! kernel that may reassociate, sums every cell in 16 lanes, several rows side by side. These
//! tests hold the printed C, the validator's machine and the spec together:
//!
//! - the compiled C computes exactly the association the IR means: its bits equal
//!   `validate::evaluate`'s on every target's order, with the AVX-512 and AVX vectors and in
//!   plain C, on inputs that round and on infinities and NaN, with rows and terms left over
//!   after the whole blocks;
//! - that association is not the spec's fold, and it is a permitted one (the validator accepts
//!   the kernel and judges its results permitted);
//! - without reassociation and below the threshold the contraction keeps its fold and the C
//!   equals the oracle bit for bit;
//! - in fma mode each product is fused into its lane, and on small integers the results are
//!   the oracle's;
//! - the validator refuses lane sums whose printed loads or lanes would not be their meaning.
//!
//! Every program runs in binary64 and in binary32, where each lane's operations are `float`
//! ones and the validator proves the regrouping with the laws of binary32 `+` and `*`.

mod rounding;

use rounding::{assert_same, compile, compiled_and_permitted, differing, lower, toolchains};
use teil_cbackend::ir::{Kernel, LaneFold, RowBlocks, Step, Strategy};
use teil_cbackend::opt::lanes::MIN_SUM_TERMS;
use teil_cbackend::opt::{printing, Printing};
use teil_cbackend::validate;

/// A matrix-vector product of `rows` x `terms`.
fn matvec(rows: u64, terms: u64) -> String {
    format!(
        "input var A : [{rows} {terms}]\ninput var x : [{terms}]\noutput var y : [{rows}]\n\
         y = contr 2 3 (prod A x)"
    )
}

/// The programs: matrix-vector products with rows and terms left over after whole blocks (37
/// rows: 9 blocks of 4 and one, or 18 of 2 and one; 1031 terms: 7 after 64 blocks of 16) and
/// with none (8 x 64); a batched one (`bij,bj->bi`, the batch a loop outside the rows); row
/// sums (`ij->i`, one operand); sums of products of two rows (`ij,ij->i`, both operands
/// per row). Each in binary64, then each in binary32.
fn programs() -> Vec<String> {
    let f64s = binary64_programs();
    let f32s = f64s.iter().map(|p| binary32(p)).collect::<Vec<_>>();
    f64s.into_iter().chain(f32s).collect()
}

/// `src` with every variable in binary32.
fn binary32(src: &str) -> String {
    src.replace(" : [", " : f32[")
}

fn binary64_programs() -> Vec<String> {
    vec![
        matvec(37, 1031),
        matvec(8, 64),
        "input var A : [3 5 200]\ninput var x : [3 200]\noutput var y : [3 5]\n\
         y = contr 3 4 (diag 1 4 (prod A x))"
            .to_string(),
        "input var A : [9 500]\noutput var y : [9]\ny = red+ 2 A".to_string(),
        "input var A : [6 100]\ninput var B : [6 100]\noutput var y : [6]\n\
         y = red+ 2 (A * B)"
            .to_string(),
    ]
}

/// The lane-sum step of `k`, which must have exactly one.
fn lane_sums(k: &mut Kernel) -> &mut Strategy {
    let mut steps = k.steps.iter_mut().filter_map(|s| match s {
        Step::Contract { c, .. } if matches!(c.strategy, Strategy::LaneSums { .. }) => {
            Some(&mut c.strategy)
        }
        _ => None,
    });
    let s = steps.next().expect("a lane-sum step");
    assert!(steps.next().is_none(), "one lane-sum step");
    s
}

#[test]
fn the_c_computes_the_lanes_the_ir_means_and_the_validator_permits_them() {
    let mut differs_from_the_fold = 0;
    for (i, src) in programs().into_iter().enumerate() {
        let p = compile(&src);
        // Padding changes the strides, not the association: one program is enough for it.
        let pads: &[u64] = if i == 0 || src == binary32(&matvec(37, 1031)) {
            &[1, 4]
        } else {
            &[1]
        };
        for &pad in pads {
            let k = lower(&p, pad, true, false);
            assert_eq!(printing(&k), [Printing::LaneSums], "M = {pad}\n{src}\n{k}");
            assert!(k.reassociates(), "{src}");
            assert_eq!(k.lifted, 0, "{src}");
            validate::validate(&p, &k).unwrap_or_else(|e| panic!("{src}: {e}"));
            for (seed, specials) in [(1, None), (2, Some(291))] {
                let inputs = rounding::inputs(&p, seed, specials);
                let oracle = teil_interp::run_oracle(&p, &inputs).expect("oracle");
                let what = format!("M = {pad}, seed {seed}:\n{src}");
                let ir = compiled_and_permitted(&what, &p, &k, &inputs);
                if specials.is_none() {
                    differs_from_the_fold += differing(&ir, &oracle);
                }
            }
        }
    }
    // Another association: on inputs that round, many cells differ from the spec's fold.
    assert!(differs_from_the_fold >= 20, "{differs_from_the_fold}");
}

#[test]
fn without_reassociation_or_below_the_threshold_the_contraction_keeps_its_fold() {
    let short = matvec(37, MIN_SUM_TERMS - 1);
    let cases = programs()
        .into_iter()
        .map(|src| (src, false))
        .chain([(short, true)]);
    for (src, lift) in cases {
        let p = compile(&src);
        let k = lower(&p, 1, lift, false);
        assert!(!printing(&k).contains(&Printing::LaneSums), "{src}\n{k}");
        assert!(!k.reassociates(), "{src}\n{k}");
        for seed in [4, 5] {
            let inputs = rounding::inputs(&p, seed, None);
            let oracle = teil_interp::run_oracle(&p, &inputs).expect("oracle");
            for (flags, tc) in toolchains() {
                let c = teil_cbackend::run::run(&tc, &k, &inputs).expect("runs");
                assert_same(&format!("`cc {flags}`: {src}"), &c.values, &oracle);
            }
        }
    }
}

#[test]
fn fma_mode_fuses_each_product_into_its_lane() {
    for src in programs() {
        let p = compile(&src);
        let mut k = lower(&p, 1, true, true);
        lane_sums(&mut k);
        let products = !src.ends_with("red+ 2 A");
        validate::validate(&p, &k).unwrap_or_else(|e| panic!("{src}: {e}"));
        let c_src = teil_cbackend::print::module(&[&k]);
        let (f, widths) = match src.contains("f32[") {
            true => ("f", [16, 8, 4]),
            false => ("", [8, 4, 2]),
        };
        for width in widths {
            let fused = format!("= teil_fmav{f}{width}(");
            assert_eq!(c_src.contains(&fused), products, "{fused}: {src}");
        }
        // Small integers: no product and no partial sum rounds, so every association and
        // every fusion gives the oracle's value.
        let inputs = teil_interp::random_inputs(&p, 6);
        let oracle = teil_interp::run_oracle(&p, &inputs).expect("oracle");
        for (flags, tc) in toolchains() {
            let c = teil_cbackend::run::run(&tc, &k, &inputs).expect("runs");
            assert_same(&format!("`cc {flags}`: {src}"), &c.values, &oracle);
        }
    }
}

#[test]
fn the_validator_refuses_lane_sums_whose_lanes_are_not_their_meaning() {
    let p = compile(&matvec(37, 1031));
    let malformed = |k: &Kernel| match validate::validate(&p, k) {
        Err(validate::ValidationError::Malformed { .. }) => {}
        other => panic!("{other:?}\n{k}"),
    };
    // Fewer terms than a block: the printed lanes would add `-0.0` sums the term lacks.
    let mut k = lower(&p, 1, true, false);
    for s in &mut k.steps {
        if let Step::Contract { c, .. } = s {
            c.k.extent = LaneFold::LANES - 1;
            c.k.logical = LaneFold::LANES - 1;
        }
    }
    malformed(&k);
    // Another number of lanes than the meaning's 16.
    let mut k = lower(&p, 1, true, false);
    if let Strategy::LaneSums { variants, .. } = lane_sums(&mut k) {
        variants[0].lanes = 8;
    }
    malformed(&k);
    // Rows along a label that is not the target's.
    let mut k = lower(&p, 1, true, false);
    let terms = match &k.steps[0] {
        Step::Contract { c, .. } => c.k.var,
        other => panic!("{other:?}"),
    };
    if let Strategy::LaneSums { rows_of, .. } = lane_sums(&mut k) {
        *rows_of = terms;
    }
    malformed(&k);
}

#[test]
fn a_product_with_rows_and_columns_stays_packed() {
    // `ik,jk->ij` reads its terms along rows of both operands too, but it is a matrix
    // product: the packed kernel's, not the lanes'.
    let p = compile(
        "input var A : [64 128]\ninput var B : [64 128]\noutput var C : [64 64]\n\
         C = contr 2 4 (prod A B)",
    );
    let k = lower(&p, 1, true, false);
    assert_eq!(printing(&k), [Printing::Packed], "{k}");
}

#[test]
fn binary32_lane_sums_are_vectors_of_floats_with_twice_the_rows() {
    // A binary32 vector holds twice binary64's lanes: the same 16 lanes take half the vectors,
    // and a block has twice the rows, the same number of independent sums.
    let p = compile(&binary32(&matvec(37, 135)));
    let k = lower(&p, 1, true, false);
    let p64 = compile(&matvec(37, 135));
    let mut k64 = lower(&p64, 1, true, false);
    let mut k32 = k.clone();
    let (Strategy::LaneSums { variants: v32, .. }, Strategy::LaneSums { variants: v64, .. }) =
        (lane_sums(&mut k32), lane_sums(&mut k64))
    else {
        panic!("{k}");
    };
    for (a, b) in v32.iter().zip(v64.iter()) {
        assert_eq!(a.target, b.target);
        let per = if b.width == 1 { 1 } else { 2 };
        assert_eq!(
            (a.lanes, a.width, a.rows),
            (b.lanes, b.width * per, b.rows * per)
        );
    }
    let c_src = teil_cbackend::print::module(&[&k]);
    assert!(c_src.contains("typedef float teil_vf8 __attribute__((vector_size(32)));"));
    assert!(c_src.contains("float teil_c = teil_l[0];"), "{c_src}");
    assert!(!c_src.contains("double teil_c"), "{c_src}");
    // The same lanes in vectors of binary64's width are refused: the printed loads would not
    // be the target's vectors of floats.
    let mut narrow = k.clone();
    if let Strategy::LaneSums { variants, .. } = lane_sums(&mut narrow) {
        for v in variants.iter_mut().filter(|v| v.width > 1) {
            v.width /= 2;
        }
    }
    match validate::validate(&p, &narrow) {
        Err(validate::ValidationError::Malformed { .. }) => {}
        other => panic!("{other:?}\n{narrow}"),
    }
}

#[test]
fn short_rows_of_a_block_come_from_separate_parts() {
    // 37 rows of 100 terms (800 bytes, at most `ROWS_APART_MAX_BYTES`): AVX-512 takes blocks of
    // 4 rows, rows `b`, `b + 9`, `b + 18` and `b + 27` of the four parts of 9
    // (`Lanes::row_blocks`); AVX and NEON blocks of 2 rows 18 apart; row 36 after the blocks
    // alone. Each row of a block reads its own part of `A` in order (PERFORMANCE.md, "Rows of
    // a block from separate parts"); the bits are the association's whatever the order (the
    // tests above run these programs' C).
    let p = compile(&matvec(37, 100));
    let mut k = lower(&p, 1, true, false);
    let c_src = teil_cbackend::print::module(&[&k]);
    let Strategy::LaneSums {
        variants, parts, ..
    } = lane_sums(&mut k)
    else {
        panic!("{k}");
    };
    assert!(*parts, "{k}");
    let blocks: Vec<RowBlocks> = variants.iter().map(|v| v.row_blocks(37, true)).collect();
    let got: Vec<(u64, u64, u64)> = blocks.iter().map(|b| (b.per, b.count, b.apart)).collect();
    assert_eq!(
        got,
        [(4, 9, 9), (2, 18, 18), (2, 18, 18), (1, 37, 37)],
        "{k}"
    );
    assert_eq!(blocks[0].row(5, 3), 5 + 27);
    for b in &blocks[..3] {
        let (rows, part) = (b.per, b.count);
        let block = format!(
            "for (long long i0 = 0; i0 < {part}; i0++) {{ /* {rows} rows at a time, {part} apart */"
        );
        assert!(c_src.contains(&block), "{block}\n{c_src}");
        for u in 1..rows {
            let row = format!("A[i0 * 100 + {} + i1]", u * part * 100);
            assert!(c_src.contains(&row), "{row}\n{c_src}");
            assert!(c_src.contains(&format!("y[i0 + {}] = teil_c;", u * part)));
        }
        let rest = format!(
            "for (long long i0 = {}; i0 < 37; i0++) {{ /* one row at a time */",
            rows * part
        );
        assert!(c_src.contains(&rest), "{rest}\n{c_src}");
    }
    assert!(c_src.contains("i0 < 37; i0++) { /* one row at a time */"));
}

#[test]
fn long_rows_of_a_block_are_adjacent() {
    // Rows whose terms span more than a page are their own streams already: 1031 terms of 8
    // bytes, and 1025 of 4, keep adjacent rows; 1024 binary32 terms (4096 bytes) take parts.
    // AVX blocks: 2 binary64 rows, 4 binary32 ones.
    for (src, parts, per) in [
        (matvec(37, 1031), false, 2),
        (binary32(&matvec(37, 1025)), false, 4),
        (binary32(&matvec(37, 1024)), true, 4),
    ] {
        let p = compile(&src);
        let mut k = lower(&p, 1, true, false);
        let c_src = teil_cbackend::print::module(&[&k]);
        let Strategy::LaneSums {
            variants, parts: p, ..
        } = lane_sums(&mut k)
        else {
            panic!("{k}");
        };
        assert_eq!(*p, parts, "{src}");
        let b = variants[2].row_blocks(37, *p);
        let part = 37 / per;
        let want = if parts { (per, 1, part) } else { (per, per, 1) };
        assert_eq!((b.per, b.step, b.apart), want, "{src}");
        let note = if parts {
            format!("/* {per} rows at a time, {part} apart */")
        } else {
            format!("i0 += {per}) {{ /* {per} rows at a time */")
        };
        assert!(c_src.contains(&note), "{note}\n{c_src}");
    }
}
