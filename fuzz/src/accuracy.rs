//! How far a target's functions are from the correctly rounded values (`teil fuzz --target CMD
//! --accuracy N`, spec/fuzzing.md, "Accuracy in ulps").
//!
//! For every function of [`Func::ALL`] and both element types, the target computes `C = f A`
//! on `N` inputs (in programs of [`BATCH`] cells) drawn where each function is interesting: its
//! usual range, magnitudes spread over every binade (subnormals and overflow included), a few
//! ulps around its edges ([`case::EDGES_F32`], [`case::EDGES_F64`]) and the special values. The
//! oracle's value is the correctly rounded one, so the distance of the target's value to it,
//! in ulps of the oracle's value ([`ulps`]), measures the target's error within half an ulp.
//! The table keeps, per function and type, the largest distance and the input that gave it,
//! the cells whose class differs (NaN, `±∞`, finite, the sign of a zero), and the subnormal
//! results the target flushed to zero.

use crate::case::{self, Case, EDGES_F32, EDGES_F64};
use crate::shrink::Inputs;
use crate::target_campaign::{Runner, Verdict};
use std::fmt;
use teil::ast::{ElemType, Func};
use teil_interp::random::SplitMix64;

/// Inputs per program.
pub const BATCH: u64 = 4096;

/// Programs [`measure`] sends for `inputs` inputs per function and type: every function in
/// both types.
pub fn programs(inputs: u64) -> u64 {
    inputs.min(MAX_INPUTS).div_ceil(BATCH).max(1) * Func::ALL.len() as u64 * 2
}

/// The most inputs per function and type (`--accuracy N`): 2^24, 4096 programs.
pub const MAX_INPUTS: u64 = 1 << 24;

/// One input, the correctly rounded value and the target's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cell {
    pub input: f64,
    pub want: f64,
    pub got: f64,
}

/// What was measured for one function in one type.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub func: Func,
    pub elem: ElemType,
    /// Inputs the target computed.
    pub inputs: u64,
    /// The largest distance in ulps among cells of the same class, and where.
    pub worst: Option<(f64, Cell)>,
    /// Cells whose class differs (NaN, `+∞`, `−∞`, finite, or the sign of a zero), and the
    /// first.
    pub special: u64,
    pub first_special: Option<Cell>,
    /// Nonzero subnormal results the target returned as zero.
    pub flushed: u64,
    /// Why the target did not compute this row (its `unsupported` reason, an error, a fault),
    /// if it did not.
    pub refused: Option<String>,
}

/// The distance from `got` to `want` in ulps of `want` in type `t`: `|got − want| / ulp(want)`,
/// where `ulp(w)` is the gap between the two values of `t` nearest `|w|` from above
/// (`2^(e − p + 1)` for `2^e ≤ |w| < 2^(e+1)`, the subnormal gap below the smallest normal).
/// Both values finite.
pub fn ulps(want: f64, got: f64, t: ElemType) -> f64 {
    let (precision, min_exponent) = match t {
        ElemType::F32 => (24, -126),
        ElemType::F64 => (53, -1022),
    };
    // The binade of |want|, exactly: from the binary64 exponent field (every binary32 value is
    // a normal binary64 number); a binary64 subnormal has the least exponent.
    let field = ((want.abs().to_bits() >> 52) & 0x7ff) as i32;
    let exponent = (field - 1023).max(min_exponent);
    (got - want).abs() / pow2(exponent - precision + 1)
}

/// `2^e` for `e` in `-1074..=1023`, exactly (`powi` alone computes `2^-1074` as `1 / 2^1074`,
/// which is `1 / ∞`).
fn pow2(e: i32) -> f64 {
    2f64.powi(e / 2) * 2f64.powi(e - e / 2)
}

/// Whether `want` and `got` differ in class: NaN, `+∞`, `−∞`, finite; and for zeros, sign.
fn class_differs(want: f64, got: f64) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() != got.is_nan();
    }
    if want.is_infinite() || got.is_infinite() {
        return want != got;
    }
    want == 0.0 && got == 0.0 && want.is_sign_negative() != got.is_sign_negative()
}

/// The usual range of `f`'s arguments in type `t`: where its value changes.
fn range(f: Func, t: ElemType) -> (f64, f64) {
    let single = t == ElemType::F32;
    match f {
        Func::Exp if single => (-110.0, 95.0),
        Func::Exp => (-760.0, 720.0),
        Func::Log => (0.0, 4.0),
        Func::Sqrt => (0.0, 100.0),
        Func::Tanh if single => (-10.0, 10.0),
        Func::Tanh => (-20.0, 20.0),
        Func::Erf if single => (-4.5, 4.5),
        Func::Erf => (-6.5, 6.5),
        Func::Abs => (-10.0, 10.0),
    }
}

/// The next value of type `t` after `x` towards `+∞` (`up`) or `−∞`; `x` finite. (By the
/// bits: `next_up` is newer than this workspace's minimum Rust.)
fn step(x: f64, t: ElemType, up: bool) -> f64 {
    let sign = if up { 1.0 } else { -1.0 };
    let (x32, smallest) = (x as f32, f64::from(f32::from_bits(1)));
    match t {
        _ if x == 0.0 => sign * if t == ElemType::F32 { smallest } else { 5e-324 },
        // Away from zero on the bits of |x| is up for a positive x, down for a negative one.
        ElemType::F32 => {
            let bits = x32.abs().to_bits();
            let bits = if up == (x > 0.0) { bits + 1 } else { bits - 1 };
            f64::from(f32::from_bits(bits).copysign(x32))
        }
        ElemType::F64 => {
            let bits = x.abs().to_bits();
            let bits = if up == (x > 0.0) { bits + 1 } else { bits - 1 };
            f64::from_bits(bits).copysign(x)
        }
    }
}

/// One input of `f` in type `t`: 40 % uniform in [`range`], 40 % of any magnitude (an exponent
/// drawn uniformly over every binade of `t`, subnormals included, either sign), 15 % within 4
/// ulps of an edge, 5 % a special value.
fn draw(f: Func, t: ElemType, rng: &mut SplitMix64) -> f64 {
    let unit = |rng: &mut SplitMix64| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let x = match rng.next_u64() % 20 {
        0..=7 => {
            let (lo, hi) = range(f, t);
            lo + (hi - lo) * unit(rng)
        }
        8..=15 => {
            let (lo, hi) = match t {
                ElemType::F32 => (-149, 128),
                ElemType::F64 => (-1074, 1024),
            };
            let e = lo + (rng.next_u64() % (hi - lo) as u64) as i32;
            let sign = if rng.next_u64() % 2 == 0 { 1.0 } else { -1.0 };
            sign * (1.0 + unit(rng)) * pow2(e)
        }
        16..=18 => {
            let edges = match t {
                ElemType::F32 => &EDGES_F32[..],
                ElemType::F64 => &EDGES_F64[..],
            };
            let sign = if rng.next_u64() % 2 == 0 { 1.0 } else { -1.0 };
            let mut x = sign * edges[(rng.next_u64() % edges.len() as u64) as usize];
            let (k, up) = (rng.next_u64() % 5, rng.next_u64() % 2 == 0);
            for _ in 0..k {
                x = step(x, t, up);
            }
            x
        }
        _ => case::SPECIAL_VALUES[(rng.next_u64() % case::SPECIAL_VALUES.len() as u64) as usize],
    };
    t.round(x)
}

/// The program `C = f A` over `n` cells of type `t`.
fn program(f: Func, t: ElemType, n: u64) -> teil::ast::Program {
    let text = format!(
        "input var A : {t}[{n}]\noutput var C : {t}[{n}]\nC = {} A\n",
        f.keyword(),
        t = t.keyword()
    );
    teil::parse(&text).program
}

/// Measures every function in both types on `inputs` inputs each (rounded up to whole
/// programs of [`BATCH`] cells), drawn with `seed`. A row the target refuses (unsupported,
/// an error, a fault, an output it did not write) keeps what was measured before and says why.
/// `progress` is told each program done; once `stop` says so (an interrupt), no more programs
/// are sent and the rows measured so far are returned.
pub fn measure(
    runner: &mut Runner,
    inputs: u64,
    seed: u64,
    stop: &dyn Fn() -> bool,
    progress: &dyn Fn(u64),
) -> Vec<Row> {
    let programs = programs(inputs) / (Func::ALL.len() as u64 * 2);
    let mut rows = Vec::new();
    let mut done = 0;
    for t in [ElemType::F32, ElemType::F64] {
        for f in Func::ALL {
            let mut row = Row {
                func: f,
                elem: t,
                inputs: 0,
                worst: None,
                special: 0,
                first_special: None,
                flushed: 0,
                refused: None,
            };
            let mut rng = SplitMix64(seed ^ ((f as u64) << 32) ^ ((t as u64) << 40));
            let min_normal = match t {
                ElemType::F32 => f64::from(f32::MIN_POSITIVE),
                ElemType::F64 => f64::MIN_POSITIVE,
            };
            for _ in 0..programs {
                if stop() {
                    rows.push(row);
                    return rows;
                }
                done += 1;
                progress(done);
                if row.refused.is_some() {
                    continue;
                }
                let a: Vec<f64> = (0..BATCH).map(|_| draw(f, t, &mut rng)).collect();
                let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[BATCH as usize]), a)
                    .expect("a vector of BATCH cells");
                let inputs = Inputs::from([("A".to_string(), a.clone())]);
                let case = match Case::new(seed, program(f, t, BATCH), Some(inputs), 0.5) {
                    Ok(c) => c,
                    Err(e) => {
                        row.refused = Some(format!("the oracle refused the program: {e:?}"));
                        continue;
                    }
                };
                let got = match runner.evaluate(&case) {
                    Ok(mut store) => store.remove("C"),
                    Err(Verdict::Unsupported(reason)) => {
                        row.refused = Some(format!("unsupported: {reason}"));
                        continue;
                    }
                    Err(Verdict::Found { detail, .. }) => {
                        row.refused = Some(detail);
                        continue;
                    }
                    Err(Verdict::Pass) => None,
                };
                let (Some(got), Some(want)) = (got, case.expected.get("C")) else {
                    row.refused = Some("the target wrote no output `C`".into());
                    continue;
                };
                row.inputs += BATCH;
                for ((&x, &w), &g) in a.iter().zip(want).zip(&got) {
                    let cell = Cell {
                        input: x,
                        want: w,
                        got: g,
                    };
                    if class_differs(w, g) {
                        row.special += 1;
                        row.first_special.get_or_insert(cell);
                        continue;
                    }
                    if !w.is_finite() {
                        continue;
                    }
                    row.flushed += u64::from(w != 0.0 && w.abs() < min_normal && g == 0.0);
                    let d = ulps(w, g, t);
                    if row.worst.is_none_or(|(worst, _)| d > worst) {
                        row.worst = Some((d, cell));
                    }
                }
            }
            rows.push(row);
        }
    }
    rows
}

/// A value of type `t` as its shortest decimal in that type.
struct Short(f64, ElemType);

impl fmt::Display for Short {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            ElemType::F32 => write!(f, "{:?}", self.0 as f32),
            ElemType::F64 => write!(f, "{:?}", self.0),
        }
    }
}

/// The table of `rows` in Markdown, one line per function and type, each line ending in a
/// newline.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| function | type | inputs | largest error (ulps) | at input | correctly rounded | target | class differences | subnormals flushed |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let t = r.elem;
        let (worst, at) = match r.worst {
            Some((0.0, _)) => ("0".into(), "- | - | -".into()),
            Some((d, c)) => (
                format!("{d}"),
                format!(
                    "{} | {} | {}",
                    Short(c.input, t),
                    Short(c.want, t),
                    Short(c.got, t)
                ),
            ),
            None => ("-".into(), "- | - | -".into()),
        };
        let special = match r.first_special {
            Some(c) => format!(
                "{} (first: {} gives {}, not {})",
                r.special,
                Short(c.input, t),
                Short(c.got, t),
                Short(c.want, t)
            ),
            None => "0".into(),
        };
        let inputs = match &r.refused {
            // The first line of the reason, in one table cell.
            Some(why) => format!(
                "{} (then {})",
                r.inputs,
                why.lines().next().unwrap_or_default().replace('|', "\\|")
            ),
            None => r.inputs.to_string(),
        };
        out.push_str(&format!(
            "| {} | {} | {inputs} | {worst} | {at} | {special} | {} |\n",
            r.func.keyword(),
            t.keyword(),
            r.flushed
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulps_are_gaps_of_the_expected_values_binade() {
        let t = ElemType::F32;
        let one = 1.0f64;
        assert_eq!(ulps(one, f64::from(1.0f32.next_up()), t), 1.0);
        assert_eq!(ulps(one, f64::from(1.0f32.next_down()), t), 0.5); // the gap below 1 is half
        assert_eq!(ulps(1.5, 1.5 + 3.0 * 2f64.powi(-23), t), 3.0);
        assert_eq!(ulps(0.0, f64::from(f32::from_bits(2)), t), 2.0); // subnormal gaps
        let sub = f64::from(f32::from_bits(7));
        assert_eq!(ulps(sub, f64::from(f32::from_bits(4)), t), 3.0);
        assert_eq!(ulps(1.0, 1.0f64.next_up(), ElemType::F64), 1.0);
        assert_eq!(ulps(5e-324, 0.0, ElemType::F64), 1.0);
        assert_eq!(pow2(-1074), 5e-324);
        assert_eq!(pow2(1023), 2f64.powi(1023));
        assert!(class_differs(0.0, -0.0) && class_differs(f64::NAN, 1.0));
        for t in ElemType::ALL {
            for x in [1.0, -1.0, 0.0, -0.0, 3.5e-40, -2.0, 3e38] {
                let x = t.round(x);
                let (up, down) = (step(x, t, true), step(x, t, false));
                assert!(up > x && down < x, "{x} {t:?}: {down} {up}");
                assert_eq!(t.round(up), up);
                assert_eq!(t.round(down), down);
                // Nothing of type t lies between.
                assert_eq!(step(up, t, false), if x == 0.0 { 0.0 } else { x }, "{x}");
            }
        }
        assert!(class_differs(f64::INFINITY, f64::MAX) && !class_differs(f64::NAN, -f64::NAN));
    }

    #[test]
    fn draws_are_values_of_their_type_over_every_part_of_the_range() {
        for t in ElemType::ALL {
            let mut rng = SplitMix64(1);
            let xs: Vec<f64> = (0..20_000).map(|_| draw(Func::Exp, t, &mut rng)).collect();
            assert!(xs.iter().all(|&x| t.round(x).to_bits() == x.to_bits()));
            let min_normal = match t {
                ElemType::F32 => f64::from(f32::MIN_POSITIVE),
                ElemType::F64 => f64::MIN_POSITIVE,
            };
            let edge = match t {
                ElemType::F32 => EDGES_F32[1],
                ElemType::F64 => EDGES_F64[1],
            };
            assert!(xs.iter().any(|x| x.is_nan()));
            assert!(xs.iter().any(|&x| x != 0.0 && x.abs() < min_normal));
            assert!(xs.iter().any(|&x| x.is_finite() && x.abs() > 1e30));
            assert!(xs.contains(&edge));
            assert!(xs
                .iter()
                .any(|&x| (-5.0..5.0).contains(&x) && x != x.trunc()));
        }
    }
}
