//! Measured sizes: what `teil tune` does (issue 43; spec/padding.md, *Sizes from the machine*).
//!
//! A formula cannot know everything about a CPU (its prefetchers, its L3's bandwidth per core,
//! how a compiler schedules a tile for it), so where a size decides between two kernel forms,
//! [`tune`] times both forms on this machine, in the spirit of FFTW's wisdom and ATLAS's search,
//! and records the choices in a machine description ([`Machine::small_product`],
//! [`Machine::small_span`]) that `--target-cpu FILE`, `TEIL_TARGET_CPU` and [`Machine::host`] (through
//! [`crate::machine::profile_path`]) read. Only the choice is measured: both forms compute every cell with the same operations in
//! the same order, so a profile changes speed, never a value, and the printed C stays a
//! function of the program and the description.
//!
//! The measurement, one [`Question`] at a time: for each candidate, a matrix product of the
//! shape class the size decides (`n x n x n` for the small-product limit, in binary64 and, for
//! [`Machine::small_product_f32`], in binary32; `64 x K x 256` for the span limit), lowered with the size just at the candidate (the dot kernel's register
//! tile) and just below it (the packed kernel), each compiled into a shared object
//! ([`crate::shared`], a private scratch cache) in exact and fma mode and called in-process on
//! the same inputs; the two forms of a mode alternate, and each time is the minimum over
//! `rounds` rounds of at least `seconds` and 3 calls. The size is the largest candidate up to
//! which the dot kernel is at least as fast as the packed one, over both modes
//! ([`Timing::dot_wins`]; half the first candidate where it never is). The dot kernel wins
//! below some size and loses above it (packing pays for itself as a product grows), so the
//! candidates are bisected ([`last_win`]): a question of `n` candidates times at most
//! `⌈log2(n + 1)⌉` of them, 11 in all with the default candidates, where timing them in order
//! up to the first loss took up to all 29 (about 30 s on a 2-core Zen 3; issue 53). A
//! candidate's four kernels are compiled side by side. Both forms' exact-mode results are
//! compared bit for bit on the way.

use crate::machine::{Machine, Sizes};
use crate::opt::{self, Printing};
use crate::run::Cancel;
use crate::shared::{Arg, ArgMut, KernelError, SharedKernel, SharedOptions};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;
use teil::ast::ElemType;

/// A size that decides between the dot kernel's register tile and the packed kernel, with the
/// products that measure it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Question {
    /// [`Sizes::small_product`]: `n x n x n` products, candidates `n` (17 to 4096).
    SmallProduct,
    /// [`Sizes::small_span`]: `64 x K x 256` products, whose `B` spans `256 K` doubles;
    /// candidates `K` (16 to 65536).
    SmallSpan,
    /// [`Sizes::small_product_f32`]: `n x n x n` binary32 products, the candidates of
    /// [`Question::SmallProduct`].
    SmallProductF32,
}

impl Question {
    pub fn name(self) -> &'static str {
        match self {
            Question::SmallProduct => "small_product",
            Question::SmallSpan => "small_span",
            Question::SmallProductF32 => "small_product_f32",
        }
    }

    /// The element type of the products.
    fn elem(self) -> ElemType {
        match self {
            Question::SmallProductF32 => ElemType::F32,
            Question::SmallProduct | Question::SmallSpan => ElemType::F64,
        }
    }

    /// The candidates' bounds.
    fn range(self) -> (u64, u64) {
        match self {
            Question::SmallProduct | Question::SmallProductF32 => (17, 4096),
            Question::SmallSpan => (16, 65536),
        }
    }

    /// `(rows, terms, columns)` of candidate `x`'s product.
    fn shape(self, x: u64) -> (u64, u64, u64) {
        match self {
            Question::SmallProduct | Question::SmallProductF32 => (x, x, x),
            Question::SmallSpan => (64, x, 256),
        }
    }

    /// The sizes for candidate `x`: the dot kernel's tile (`dot`) or the packed kernel.
    fn sizes(self, base: Sizes, x: u64, dot: bool) -> Sizes {
        let below = u64::from(!dot);
        match self {
            Question::SmallProduct => Sizes {
                small_product: x - below,
                small_span: u64::MAX,
                ..base
            },
            Question::SmallSpan => Sizes {
                small_product: base.small_product.max(256),
                small_span: 256 * x - below,
                ..base
            },
            Question::SmallProductF32 => Sizes {
                small_product_f32: x - below,
                small_span: u64::MAX,
                ..base
            },
        }
    }

    /// The size a measured candidate `x` gives.
    fn size(self, x: u64) -> u64 {
        match self {
            Question::SmallProduct | Question::SmallProductF32 => x.max(16),
            Question::SmallSpan => (256 * x).max(1 << 10),
        }
    }
}

/// How [`tune`] measures.
#[derive(Clone, Debug)]
pub struct TuneOptions {
    /// Candidates of [`Question::SmallProduct`] and [`Question::SmallProductF32`] (`n`),
    /// ascending.
    pub candidates: Vec<u64>,
    /// Candidates of [`Question::SmallSpan`] (`K`), ascending.
    pub span_candidates: Vec<u64>,
    /// Each timing calls the kernel for at least this long (and at least 3 times).
    pub seconds: f64,
    /// Rounds of timings; each form's time is its minimum over them.
    pub rounds: usize,
    /// The C compiler and its flags (the shared objects' defaults where `None`).
    pub cc: String,
    pub cflags: Option<String>,
    /// Stops compiling and timing when set (Ctrl-C).
    pub cancel: Cancel,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            candidates: vec![96, 128, 160, 192, 224, 256, 288, 320, 384, 448, 512],
            span_candidates: vec![128, 256, 512, 1024, 2048, 4096, 7168],
            seconds: 0.05,
            rounds: 3,
            cc: SharedOptions::default().cc,
            cflags: Some("-O3 -march=native".to_string()),
            cancel: Cancel::default(),
        }
    }
}

/// One candidate's times, in seconds per call: `[exact, fma]` for each form.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    pub question: Question,
    /// The candidate (`n` or `K`).
    pub n: u64,
    pub dot: [f64; 2],
    pub packed: [f64; 2],
}

impl Timing {
    /// Whether the dot kernel was at least as fast over both modes: the geometric mean of its
    /// time ratios to the packed kernel's in exact and fma mode at most 1. (One limit serves
    /// both modes; where they disagree, the mode that gains more decides. On the Xeon of
    /// PERFORMANCE.md the tile gained 8-11 % in exact mode where it lost 3-9 % in fma mode.)
    pub fn dot_wins(&self) -> bool {
        self.dot[0] * self.dot[1] <= self.packed[0] * self.packed[1]
    }
}

/// What [`tune`] found: the machine with its measured sizes, and the times.
#[derive(Clone, Debug, PartialEq)]
pub struct Tuned {
    pub machine: Machine,
    pub timings: Vec<Timing>,
}

impl Tuned {
    /// The description to write: [`Machine::to_text`] with the times as comments.
    pub fn to_text(&self) -> String {
        let mut s = self.machine.to_text();
        let _ = writeln!(
            s,
            "# teil tune: ms per call (exact / fma), the dot kernel's tile against the packed \
             kernel"
        );
        for t in &self.timings {
            let (m, k, n) = t.question.shape(t.n);
            let _ = writeln!(
                s,
                "# {} {m} x {k} x {n}: dot {:.3} / {:.3}, packed {:.3} / {:.3}{}",
                t.question.name(),
                t.dot[0] * 1e3,
                t.dot[1] * 1e3,
                t.packed[0] * 1e3,
                t.packed[1] * 1e3,
                if t.dot_wins() { "  dot" } else { "  packed" }
            );
        }
        s
    }
}

/// Why tuning stopped.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    #[error("the candidates of {} must be ascending, from {} to {}, got {values:?}", question.name(), question.range().0, question.range().1)]
    Candidates {
        question: Question,
        values: Vec<u64>,
    },
    #[error("--seconds must be from 0.001 to 60 and --rounds from 1 to 100")]
    Effort,
    #[error("interrupted")]
    Interrupted,
    #[error("cannot create a scratch directory for the kernels: {0}")]
    Scratch(std::io::Error),
    #[error("the kernel for {n} of {} ({form}, {mode}): {error}", question.name())]
    Kernel {
        question: Question,
        n: u64,
        form: &'static str,
        mode: &'static str,
        error: Box<KernelError>,
    },
    /// The two forms' exact-mode results differ (a bug of the backend: both compute every cell
    /// in the spec's order).
    #[error("internal error: the dot and packed kernels of {} at {at} computed different values", question.name())]
    Differ { question: Question, at: u64 },
    /// The lowering did not give the form a limit should give (a bug of this module).
    #[error("internal error: {n} of {} lowered to {got:?}", question.name())]
    Form {
        question: Question,
        n: u64,
        got: Vec<Printing>,
    },
}

/// What [`tune`] tells its caller as it goes: what it is doing, and how many candidates are
/// measured of how many it may measure (`total` shrinks where a question is decided early).
#[derive(Clone, Copy, Debug)]
pub struct Step<'a> {
    pub what: &'a str,
    pub done: usize,
    pub total: usize,
}

/// Measures every [`Question`] on this machine, starting from `base` (usually
/// [`Machine::host`] without measured sizes); `progress` is told what is being done.
///
/// A question's size is the candidate where bisection ([`last_win`]) ends: one the dot kernel
/// won at, next to one it lost at (the largest it wins at where its wins are a prefix); the
/// timings are reported in ascending order of the candidates.
pub fn tune(
    base: &Machine,
    opts: &TuneOptions,
    progress: &mut dyn FnMut(Step<'_>),
) -> Result<Tuned, TuneError> {
    let questions = [
        (Question::SmallProduct, &opts.candidates),
        (Question::SmallSpan, &opts.span_candidates),
        (Question::SmallProductF32, &opts.candidates),
    ];
    for (question, c) in questions {
        let (lo, hi) = question.range();
        let ascending = c.windows(2).all(|w| w[0] < w[1]);
        if c.is_empty() || c.len() > 64 || !ascending || c.iter().any(|x| !(lo..=hi).contains(x)) {
            return Err(TuneError::Candidates {
                question,
                values: c.clone(),
            });
        }
    }
    if !(0.001..=60.0).contains(&opts.seconds) || !(1..=100).contains(&opts.rounds) {
        return Err(TuneError::Effort);
    }
    let scratch = tempfile::tempdir().map_err(TuneError::Scratch)?;
    let mut machine = base.clone();
    let mut timings = Vec::new();
    let mut total: usize = questions.iter().map(|(_, c)| probes(c.len())).sum();
    let mut done = 0;
    for (question, c) in questions {
        let mut found: Vec<Timing> = Vec::new();
        let wins = last_win(c.len(), &mut |i| {
            let mut step = |what: &str| {
                progress(Step { what, done, total });
            };
            let t = measure(question, c[i], &machine, opts, scratch.path(), &mut step)?;
            found.push(t);
            done += 1;
            Ok(t.dot_wins())
        })?;
        // Bisection may stop a probe short of its bound.
        total -= probes(c.len()) - found.len();
        progress(Step {
            what: &format!("{} measured", question.name()),
            done,
            total,
        });
        found.sort_by_key(|t| t.n);
        let size = match wins {
            0 => question.size(c[0] / 2),
            w => question.size(c[w - 1]),
        };
        match question {
            Question::SmallProduct => machine.small_product = Some(size),
            Question::SmallSpan => machine.small_span = Some(size),
            Question::SmallProductF32 => machine.small_product_f32 = Some(size),
        }
        timings.extend(found);
    }
    Ok(Tuned { machine, timings })
}

/// The most probes [`last_win`] makes among `n` candidates: `⌈log2(n + 1)⌉`.
pub fn probes(n: usize) -> usize {
    (usize::BITS - n.leading_zeros()) as usize
}

/// Among `n` candidates in ascending order, where `wins(i)` says whether the dot kernel wins
/// at candidate `i`, the number of candidates it wins at, taking it to win below some size and
/// lose above it: bisection, at most [`probes`]`(n)` calls of `wins`, each candidate at most
/// once. Where the measurements are not monotone (noise near the crossover), the answer is
/// still a candidate it won at followed by one it lost at (or the ends).
pub fn last_win<E>(n: usize, wins: &mut dyn FnMut(usize) -> Result<bool, E>) -> Result<usize, E> {
    // The answer lies in lo..=hi: the candidates below lo won, those from hi on lost.
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if wins(mid)? {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// What a failure of candidate `n`'s kernel in this form and mode becomes.
fn kernel_error(
    question: Question,
    n: u64,
    form: &'static str,
    mode: &'static str,
) -> impl Fn(KernelError) -> TuneError + Copy {
    move |error| TuneError::Kernel {
        question,
        n,
        form,
        mode,
        error: Box::new(error),
    }
}

/// Both forms of candidate `x` of `question`, in both modes, timed.
fn measure(
    question: Question,
    x: u64,
    machine: &Machine,
    opts: &TuneOptions,
    scratch: &std::path::Path,
    progress: &mut dyn FnMut(&str),
) -> Result<Timing, TuneError> {
    let (m, k, n) = question.shape(x);
    let elem = question.elem();
    let ty = match elem {
        ElemType::F64 => "",
        ElemType::F32 => "f32",
    };
    let src = format!(
        "input var A : {ty}[{m} {k}]\ninput var B : {ty}[{k} {n}]\noutput var C : {ty}[{m} {n}]\n\
         C = (A # B) .[2 3]\n"
    );
    let (p, _) = teil::compile(&src).expect("the product checks");
    // Multiples of 2^-10 in [-0.5, 0.5): binary32 numbers too.
    let value = |i: usize| ((i * 7919) % 1024) as f64 / 1024.0 - 0.5;
    let (mu, ku, nu) = (m as usize, k as usize, n as usize);
    let a = ndarray::Array::from_shape_fn((mu, ku), |(i, j)| value(i * ku + j)).into_dyn();
    let b = ndarray::Array::from_shape_fn((ku, nu), |(i, j)| value(i * nu + j + 1)).into_dyn();
    // The arrays in the kernel's own type, so that a call converts nothing.
    let (a32, b32) = (a.mapv(|v| v as f32), b.mapv(|v| v as f32));
    let inputs: BTreeMap<String, Arg<'_>> = match elem {
        ElemType::F64 => [("A", Arg::F64(a.view())), ("B", Arg::F64(b.view()))],
        ElemType::F32 => [("A", Arg::F32(a32.view())), ("B", Arg::F32(b32.view()))],
    }
    .into_iter()
    .map(|(name, v)| (name.to_string(), v))
    .collect();
    let mut out = ndarray::ArrayD::<f64>::zeros(vec![mu, nu]);
    let mut out32 = ndarray::ArrayD::<f32>::zeros(vec![mu, nu]);
    let forms = [
        ("dot", true, Printing::Dot),
        ("packed", false, Printing::Packed),
    ];
    // The four kernels (each form in each mode), checked to take their form, then compiled
    // side by side: the compiler is most of a candidate's time.
    let mut jobs = Vec::new();
    for (mode, fma) in [("exact", false), ("fma", true)] {
        for (form, dot, want) in forms {
            let fail = kernel_error(question, x, form, mode);
            let sizes = question.sizes(machine.sizes(), x, dot);
            let lower = crate::Options {
                fma,
                sizes,
                ..crate::Options::default()
            };
            let lowered = crate::lower(&p, &lower).map_err(|e| fail(e.into()))?;
            let got = opt::printing(&lowered);
            if got != [want] {
                return Err(TuneError::Form {
                    question,
                    n: x,
                    got,
                });
            }
            let shared = SharedOptions {
                cc: opts.cc.clone(),
                cflags: opts.cflags.clone(),
                fma,
                sizes,
                cache_dir: Some(scratch.to_path_buf()),
                cancel: opts.cancel.clone(),
                ..SharedOptions::default()
            };
            jobs.push((form, mode, shared));
        }
    }
    if opts.cancel.is_cancelled() {
        return Err(TuneError::Interrupted);
    }
    progress(&format!("compiling {m} x {k} x {n}"));
    let compiled: Vec<Result<SharedKernel, KernelError>> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|(_, _, shared)| s.spawn(|| SharedKernel::compile(&p, shared)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let mut kernels = Vec::new();
    for ((form, mode, _), c) in jobs.iter().zip(compiled) {
        let compiled = c.map_err(|error| match error {
            KernelError::Compile(crate::run::DriverError::Interrupted) => TuneError::Interrupted,
            error => kernel_error(question, x, form, mode)(error),
        })?;
        kernels.push((*form, *mode, compiled));
    }
    let mut best = [f64::INFINITY; 4];
    let mut results: Vec<Option<ndarray::ArrayD<f64>>> = vec![None; 4];
    for round in 0..opts.rounds {
        progress(&format!(
            "timing {m} x {k} x {n}, round {} of {}",
            round + 1,
            opts.rounds
        ));
        for (i, (form, mode, kernel)) in kernels.iter().enumerate() {
            let fail = kernel_error(question, x, form, mode);
            let target = match elem {
                ElemType::F64 => ArgMut::F64(out.view_mut()),
                ElemType::F32 => ArgMut::F32(out32.view_mut()),
            };
            let mut outs = BTreeMap::from([("C".to_string(), target)]);
            kernel.call_typed(&inputs, &mut outs).map_err(&fail)?;
            let started = Instant::now();
            let mut calls = 0;
            while calls < 3 || started.elapsed().as_secs_f64() < opts.seconds {
                if opts.cancel.is_cancelled() {
                    return Err(TuneError::Interrupted);
                }
                let t = Instant::now();
                kernel.call_typed(&inputs, &mut outs).map_err(&fail)?;
                best[i] = best[i].min(t.elapsed().as_secs_f64());
                calls += 1;
            }
            drop(outs);
            results[i].get_or_insert_with(|| match elem {
                ElemType::F64 => out.clone(),
                ElemType::F32 => out32.mapv(f64::from),
            });
        }
    }
    // In exact mode both forms computed every cell with the same operations in the same
    // order: the same bits.
    let same = match (&results[0], &results[1]) {
        (Some(d), Some(q)) => d.iter().zip(q).all(|(x, y)| x.to_bits() == y.to_bits()),
        _ => false,
    };
    if !same {
        return Err(TuneError::Differ { question, at: x });
    }
    Ok(Timing {
        question,
        n: x,
        dot: [best[0], best[2]],
        packed: [best[1], best[3]],
    })
}

#[cfg(test)]
mod tests {
    use super::{last_win, probes};

    #[test]
    fn bisection_finds_every_crossover_within_its_probes() {
        for n in 0..=40 {
            for crossover in 0..=n {
                let mut asked = Vec::new();
                let got = last_win::<()>(n, &mut |i| {
                    asked.push(i);
                    Ok(i < crossover)
                })
                .unwrap();
                assert_eq!(got, crossover, "n = {n}");
                assert!(
                    asked.len() <= probes(n),
                    "n = {n}, crossover {crossover}: {asked:?}"
                );
                let mut unique = asked.clone();
                unique.sort_unstable();
                unique.dedup();
                assert_eq!(unique.len(), asked.len(), "{asked:?}");
            }
        }
        assert_eq!([probes(0), probes(1), probes(7), probes(11)], [0, 1, 3, 4]);
    }

    #[test]
    fn a_non_monotone_answer_still_sits_between_a_win_and_a_loss() {
        // Noise: wins at 0, 1, 3 and 6 of 8. Whatever bisection returns, the candidate before
        // it (if any) won and the candidate at it (if any) lost, both as measured.
        let pattern = [true, true, false, true, false, false, true, false];
        let mut seen = std::collections::BTreeMap::new();
        let got = last_win::<()>(pattern.len(), &mut |i| {
            seen.insert(i, pattern[i]);
            Ok(pattern[i])
        })
        .unwrap();
        if got > 0 {
            assert_eq!(seen.get(&(got - 1)), Some(&true), "{got} {seen:?}");
        }
        if got < pattern.len() {
            assert_eq!(seen.get(&got), Some(&false), "{got} {seen:?}");
        }
    }

    #[test]
    fn an_error_stops_the_search() {
        let mut calls = 0;
        let got = last_win(11, &mut |_| {
            calls += 1;
            Err("compile failed")
        });
        assert_eq!((got, calls), (Err("compile failed"), 1));
    }
}
