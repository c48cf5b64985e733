//! Programs that reach the C backend's kernel forms (issue 15): the generator's extents (at
//! most 3) almost never give a contraction of 512 or more multiplications, a transposition
//! with extents above 8 or a reduction nest of 512 operations, so the packed and dot
//! contraction steps, the tiled steps and the interchanged nests (`teil_cbackend::opt`) would
//! go untested by the campaign. Program indices `16` to `19` modulo [`PERIOD`] (5 % of the
//! programs each) are drawn from small templates instead, with extents from the program seed:
//!
//! - `16`: a reduction whose nest the interchange pass reorders (`ir::Node::Fold`): the
//!   maximum along the first axis of a rank-3 tensor, extents 9-12 x 6-10 x 10-16 (the
//!   reduction moves outside a dense block of target loops; at `M = 4` it folds into a row),
//!   or a sum along the middle axis (the reduction between the target loops); in every second
//!   period (`36`, `76`, ...) instead a sum of a vector, or of a product of two, to a scalar,
//!   64-150 terms: a sum in lanes (`ir::LaneFold`, another association that the validator
//!   checks);
//! - `17`: a small matrix product `C = (A # B) .[2 3]`, extents 16-24: a dot contraction step
//!   with its register tile (`opt::contract::DOT_SMALL`), or `A` transposed with 5-9 rows,
//!   8-12 terms and 321-336 columns: a packed contraction step; in every second period (`37`, `77`, ...) instead a nested sum
//!   `C[d, c] = Σ_b Σ_a A[a, b, c] B[b, d, a]` (the TCCG pattern abc,bda->dc), extents 10-16
//!   for `c`, `d` and 7-10 for `a`, `b`: a packed two-level contraction step;
//! - `18`: a matrix-vector product `y = (A # x) .[2 3]`, 8-24 rows of 64-96 terms: a dot
//!   contraction step;
//! - `19`: a transposition `Y = X ^[1 2]` (or plus a matrix), extents 9-30: a tiled step.
//!
//! Indices below 16 are never replaced, so the first programs of every campaign (where the
//! planted-bug budgets of spec/fuzzing.md were measured) are the generator's.

use teil::ast::Program;
use teil_interp::random::mix;

/// Every `PERIOD` programs, four are drawn from the templates.
pub const PERIOD: u64 = 20;

/// The template program for index `index` with program seed `seed`, if the index is one of
/// the four of each period.
pub fn program(index: u64, seed: u64) -> Option<Program> {
    let pick = |lo: u64, hi: u64, salt: u64| lo + mix(seed ^ salt) % (hi - lo + 1);
    let variant = mix(seed ^ 0x7661_7269) % 2;
    let text = match index % PERIOD {
        16 if (index / PERIOD) % 2 == 1 => {
            let n = pick(64, 150, 15);
            if variant == 0 {
                format!("input var x : [{n}]\noutput var s : []\ns = red+ 1 x\n")
            } else {
                format!(
                    "input var x : [{n}]\ninput var y : [{n}]\noutput var s : []\n\
                     s = red+ 1 (x * y)\n"
                )
            }
        }
        16 => {
            let (k, m, n) = (pick(9, 12, 8), pick(6, 10, 9), pick(10, 16, 10));
            if variant == 0 {
                format!("input var X : [{k} {m} {n}]\noutput var Y : [{m} {n}]\nY = redmax 1 X\n")
            } else {
                format!("input var X : [{m} {k} {n}]\noutput var Y : [{m} {n}]\nY = red+ 2 X\n")
            }
        }
        17 if (index / PERIOD) % 2 == 1 => {
            let (a, b) = (pick(7, 10, 11), pick(7, 10, 12));
            let (c, d) = (pick(10, 16, 13), pick(10, 16, 14));
            format!(
                "input var A : [{a} {b} {c}]\ninput var B : [{b} {d} {a}]\noutput var C : [{d} {c}]\n\
                 C = transp 1 2 (contr 1 3 (contr 1 6 (prod A B)))\n"
            )
        }
        17 => {
            if variant == 0 {
                let (m, k, n) = (pick(16, 24, 1), pick(16, 24, 2), pick(16, 24, 3));
                format!(
                    "input var A : [{m} {k}]\ninput var B : [{k} {n}]\noutput var C : [{m} {n}]\n\
                     C = (A # B) .[2 3]\n"
                )
            } else {
                let (m, k, n) = (pick(5, 9, 1), pick(8, 12, 2), pick(321, 336, 3));
                format!(
                    "input var A : [{k} {m}]\ninput var B : [{k} {n}]\noutput var C : [{m} {n}]\n\
                     C = (A ^[1 2] # B) .[2 3]\n"
                )
            }
        }
        18 => {
            let (m, k) = (pick(8, 24, 4), pick(64, 96, 5));
            format!(
                "input var A : [{m} {k}]\ninput var x : [{k}]\noutput var y : [{m}]\n\
                 y = (A # x) .[2 3]\n"
            )
        }
        19 => {
            let (m, n) = (pick(9, 30, 6), pick(9, 30, 7));
            if variant == 0 {
                format!("input var X : [{m} {n}]\noutput var Y : [{n} {m}]\nY = X ^[1 2]\n")
            } else {
                format!(
                    "input var X : [{m} {n}]\ninput var B : [{n} {m}]\noutput var Y : [{n} {m}]\n\
                     Y = X ^[1 2] + B\n"
                )
            }
        }
        _ => return None,
    };
    teil::compile(&text).ok().map(|(p, _)| p.program().clone())
}
