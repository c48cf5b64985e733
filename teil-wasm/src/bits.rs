//! `function_bits`: the element-wise functions' values on a fixed set of inputs, so that the
//! WebAssembly build can be compared bit for bit with the native one. Natively
//! `teil_interp::functions` calls the `core-math` crate; in the browser, the same CORE-MATH
//! sources compiled with Clang (teil-interp's `build.rs`). The native answer is a snapshot
//! (`tests/snapshots/function_bits__function_bits.snap`, written by `tests/function_bits.rs`),
//! and the playground's end-to-end tests ask the built module in the browser for the same
//! answer and compare it with that snapshot (`web/tests/e2e.test.mjs`).
//!
//! For each function and element type: the special inputs (zeros, infinities, NaN,
//! subnormals, the extremes, and every threshold of the functions: exp's overflow and
//! underflow, tanh's and erf's saturation, the branch points of CORE-MATH's code, each with
//! the 8 neighbours of the type on either side), listed with their results; then `random`
//! inputs of two kinds, random bit patterns of the type and uniform values over the
//! function's interesting interval, counted and digested with the special ones. The digest is
//! 64-bit FNV-1a over each input's and result's bits (binary64, holding a binary32 value
//! exactly); a NaN result counts as the one NaN, since TeIL has one undefined value and a NaN's
//! sign and payload are not a result (WebAssembly leaves them open).

use serde_json::{json, Value};
use teil::ast::{ElemType, Func, Func2};
use teil_interp::functions::{apply, apply2};
use teil_interp::random::SplitMix64;

/// The random inputs of each kind per function and type, unless the request says otherwise.
pub const DEFAULT_RANDOM: u64 = 20_000;

/// The most random inputs a request may ask for (a few seconds in the browser).
const MAX_RANDOM: u64 = 1_000_000;

/// `{"cases": [...]}`: one case per function and element type (see the module documentation).
pub fn function_bits(random: u64) -> Result<Value, String> {
    if random > MAX_RANDOM {
        return Err(format!("`random` is at most {MAX_RANDOM}"));
    }
    let mut cases = Vec::new();
    for t in [ElemType::F32, ElemType::F64] {
        for f in Func::ALL {
            let special = special_inputs(Some(f), t);
            let mut rng = SplitMix64(seed(f.keyword(), t));
            let (lo, hi) = interval(f, t);
            let randoms = (0..random).flat_map(|_| {
                let bits = random_value(&mut rng, t);
                let uniform = t.round(lo + (hi - lo) * unit(&mut rng));
                [bits, uniform]
            });
            let mut digest = Digest::new();
            let mut listed = Vec::new();
            let mut count = 0u64;
            for (i, x) in special.iter().copied().chain(randoms).enumerate() {
                let y = apply(f, t, x);
                digest.add(x);
                digest.add(y);
                count += 1;
                if i < special.len() {
                    listed.push(format!("{} -> {}", text(x, t), text(y, t)));
                }
            }
            cases.push(json!({
                "function": f.keyword(),
                "type": t.keyword(),
                "count": count,
                "digest": digest.hex(),
                "special": listed,
            }));
        }
        for f in Func2::ALL {
            // Every pair of a small set of special values, then random pairs.
            let values = special_inputs(None, t);
            let pairs: Vec<(f64, f64)> = values
                .iter()
                .flat_map(|&a| values.iter().map(move |&b| (a, b)))
                .collect();
            let mut rng = SplitMix64(seed(f.keyword(), t));
            let randoms = (0..2 * random).map(|_| {
                let a = random_value(&mut rng, t);
                // A third of the pairs equal, a third opposite, to reach the ties' branches.
                let b = match rng.below(3) {
                    0 => a,
                    1 => -a,
                    _ => random_value(&mut rng, t),
                };
                (a, b)
            });
            let mut digest = Digest::new();
            let mut count = 0u64;
            for (a, b) in pairs.iter().copied().chain(randoms) {
                let y = apply2(f, a, b);
                digest.add(a);
                digest.add(b);
                digest.add(y);
                count += 1;
            }
            cases.push(json!({
                "function": f.keyword(),
                "type": t.keyword(),
                "count": count,
                "digest": digest.hex(),
            }));
        }
    }
    Ok(json!({ "random": random, "cases": cases }))
}

/// A value as the shortest decimal that reads back to it in its type (`-0.0`, `inf`, `NaN`).
fn text(x: f64, t: ElemType) -> String {
    match t {
        ElemType::F32 => format!("{:?}", x as f32),
        ElemType::F64 => format!("{x:?}"),
    }
}

/// One stream per function and type.
fn seed(name: &str, t: ElemType) -> u64 {
    name.bytes()
        .chain(t.keyword().bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
}

/// A uniform value in `[0, 1)`.
fn unit(rng: &mut SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// A random bit pattern of the type: every exponent equally likely, NaNs and infinities
/// included.
fn random_value(rng: &mut SplitMix64, t: ElemType) -> f64 {
    match t {
        ElemType::F32 => f32::from_bits(rng.next_u64() as u32) as f64,
        ElemType::F64 => f64::from_bits(rng.next_u64()),
    }
}

/// Where the function's results are neither constant nor trivial.
fn interval(f: Func, t: ElemType) -> (f64, f64) {
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

/// The special inputs of `f` in type `t` (values of `t`, held in binary64); with no function,
/// the common ones only.
fn special_inputs(f: Option<Func>, t: ElemType) -> Vec<f64> {
    let single = t == ElemType::F32;
    let (min_sub, max_sub, min_normal, max) = if single {
        (
            f32::from_bits(1) as f64,
            f32::from_bits(0x007f_ffff) as f64,
            f32::MIN_POSITIVE as f64,
            f32::MAX as f64,
        )
    } else {
        (
            f64::from_bits(1),
            f64::from_bits(0x000f_ffff_ffff_ffff),
            f64::MIN_POSITIVE,
            f64::MAX,
        )
    };
    let mut out = vec![0.0, f64::INFINITY, f64::NAN, 1.0, 0.5, 2.0];
    for x in [min_sub, max_sub, min_normal, max, 0.1, 3.0, 1e-5] {
        out.push(t.round(x));
    }
    if f.is_none() {
        let negatives: Vec<f64> = out.iter().map(|x| -x).collect();
        out.extend(negatives);
        return distinct(out);
    }
    // A subnormal between the extremes.
    out.push(t.round(min_sub * 12345.0));
    // Thresholds: each with its 8 neighbours on either side.
    let thresholds: Vec<f64> = match (f.unwrap(), single) {
        // Overflow, the subnormal results, underflow to +0 (ln 2^-150), CORE-MATH's branch
        // points (x < -0x1.9d1d8p+6, |x| < 0x1.93813ep-16), where exp x rounds to 1.
        (Func::Exp, true) => vec![
            88.72283935546875,
            f32::from_bits(0x42b1_7217) as f64,
            -87.336_544_750_553_1,
            -103.278_929_903_431_85,
            -103.972_077_083_991_8,
            f32::from_bits(0xc2ce_8ec0) as f64,
            f32::from_bits(0x37c9_c09f) as f64,
            2f64.powi(-24),
            -(2f64.powi(-25)),
        ],
        // Overflow (0x1.62e42fefa39efp+9), the subnormal results (0x1.6232bdd7abcd2p+9),
        // underflow to +0, |x| ≤ 2^-54 and where exp x rounds to 1.
        (Func::Exp, false) => vec![
            f64::from_bits(0x4086_2e42_fefa_39ef),
            f64::from_bits(0xc086_232b_dd7a_bcd2),
            f64::from_bits(0xc087_4910_d52d_3051),
            -744.440_071_921_381_3,
            2f64.powi(-54),
            2f64.powi(-53),
            -(2f64.powi(-54)),
        ],
        (Func::Log, _) => vec![1.0, std::f64::consts::E, 0.5, 2.0, 10.0, min_normal],
        (Func::Sqrt, _) => vec![4.0, 2.0, min_normal, 1e10],
        // Saturation to ±1 (|x| > 0x1.205966p+3 in binary32, |x| ≥ 0x1.30fc1931f09cap+4 in
        // binary64) and the small-argument branches.
        (Func::Tanh, true) => vec![
            f32::from_bits(0x4110_2cb3) as f64,
            -(f32::from_bits(0x4110_2cb3) as f64),
            2f64.powi(-13),
            2f64.powi(-26),
            -(2f64.powi(-26)),
        ],
        (Func::Tanh, false) => vec![
            f64::from_bits(0x4033_0fc1_931f_09ca),
            -f64::from_bits(0x4033_0fc1_931f_09ca),
            f64::from_bits(0x3e4d_12ed_0af1_a27f),
            0.25,
            -0.25,
        ],
        // Saturation (|x| > 0x1.f5a888p+1, > 0x1.7afb48dc96626p+2) and the small-argument
        // branches.
        (Func::Erf, true) => vec![
            f32::from_bits(0x407a_d444) as f64,
            -(f32::from_bits(0x407a_d444) as f64),
            0.4375,
            -0.4375,
            f32::from_bits(0x0071_6fe1) as f64,
        ],
        (Func::Erf, false) => vec![
            f64::from_bits(0x4017_afb4_8dc9_6626),
            -f64::from_bits(0x4017_afb4_8dc9_6626),
            2f64.powi(-61),
            -(2f64.powi(-61)),
        ],
        (Func::Abs, _) => vec![],
    };
    for x in thresholds {
        let x = t.round(x);
        out.push(x);
        let (mut up, mut down) = (x, x);
        for _ in 0..8 {
            up = next(up, t, true);
            down = next(down, t, false);
            out.push(up);
            out.push(down);
        }
    }
    let negatives: Vec<f64> = out.iter().map(|x| -x).collect();
    out.extend(negatives);
    distinct(out)
}

/// `values` without repetitions (by bits, NaNs as one), in their order.
fn distinct(values: Vec<f64>) -> Vec<f64> {
    let mut seen = std::collections::HashSet::new();
    values
        .into_iter()
        .filter(|x| {
            seen.insert(if x.is_nan() {
                f64::NAN.to_bits()
            } else {
                x.to_bits()
            })
        })
        .collect()
}

/// The neighbour of `x` in type `t` towards +∞ (`up`) or -∞; `x` finite and not zero.
fn next(x: f64, t: ElemType, up: bool) -> f64 {
    match t {
        ElemType::F32 => {
            let b = (x as f32).to_bits();
            let away = (x > 0.0) == up;
            f32::from_bits(if away { b + 1 } else { b - 1 }) as f64
        }
        ElemType::F64 => {
            let b = x.to_bits();
            let away = (x > 0.0) == up;
            f64::from_bits(if away { b + 1 } else { b - 1 })
        }
    }
}

/// 64-bit FNV-1a over values' binary64 bits, a NaN as the one NaN.
struct Digest(u64);

impl Digest {
    fn new() -> Self {
        Digest(0xcbf2_9ce4_8422_2325)
    }

    fn add(&mut self, x: f64) {
        let bits = if x.is_nan() {
            f64::NAN.to_bits()
        } else {
            x.to_bits()
        };
        for b in bits.to_le_bytes() {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}
