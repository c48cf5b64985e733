//! Differential fuzzing campaigns (issue 5; spec/fuzzing.md): random well-typed programs
//! through every evaluator, metamorphic variants, ill-typed mutants, and the C backend at
//! padding multiples drawn per program, batched so that compiling does not dominate.
//!
//! For each program (drawn from [`gen`] with a seed derived from the campaign seed and the
//! program's index, [`program_seed`]):
//!
//! 1. the oracle runs on reproducible small-integer inputs; a well-typed program on which it
//!    trips the out-of-bounds witness or fails internally is a mismatch ([`Check::Oracle`]); a
//!    program too large for it is discarded and counted;
//! 2. the fast evaluator agrees with the oracle ([`Check::Fast`]);
//! 3. metamorphic variants agree: printing in each syntax and re-parsing gives the same program
//!    and the same values ([`Check::RoundTrip`]); the Core-TeIL desugaring evaluates to the same
//!    store under both evaluators ([`Check::Core`]); so does a chain of three rewrites by the
//!    §3.6 laws ([`Check::Laws`], see [`laws`]);
//! 4. one ill-typed mutant is rejected with exactly the code of the rule it breaks
//!    ([`Check::IllTyped`]);
//! 5. the C backend at the padding multiple `M` the program's seed draws from the campaign's
//!    ([`drawn_pad`]; at each of them with [`Config::every_pad`]) agrees with the oracle, leaves
//!    every padding cell of every parameter zero and does not write input-only parameters
//!    ([`Check::C`]).
//!    Kernels of a whole chunk of programs are compiled into one translation unit and run by
//!    one driver process. A program with a product-then-add also runs in fma mode without
//!    lifting (`Check::C { fma: true, .. }`), within the bound of spec/values.md ("Fused
//!    multiply-add") of the oracle in every cell that has one;
//! 6. one kernel per program, if its shapes are small, goes through the translation validator
//!    (`teil_cbackend::validate`), which must not reject it ([`Check::Validate`]).
//!
//! A failing program is shrunk ([`shrink`]) with a predicate that re-runs exactly the failing
//! check, and written as a reproducer ([`crate::repro`]) that `teil fuzz --replay FILE` runs
//! again.
//!
//! A campaign can end early ([`Stop`]): when the toolchain's cancellation flag is set (a
//! signal), between programs or while a compiler or driver runs, and when the C compiler times
//! out, which says nothing about the program. The report then counts the chunks that completed;
//! nothing is shrunk. A driver that times out, on the other hand, runs a kernel that does not
//! terminate: that is a failed C check like a crash (spec/fuzzing.md).

pub use crate::check::{Check, FailedCheck};
use crate::compare::{self, Cells, Tolerance};
use crate::error::{CheckFailed, Codes, Difference, FileError, NotPermitted};
use crate::gen::{self, GenConfig};
use crate::inplace;
use crate::isa::Isa;
use crate::laws::{self, Law};
use crate::mutate::{self, Mutation};
use crate::profile::{Phase, Profile};
use crate::shrink::{self, Inputs};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use teil::ast::{BinOp, ExprKind, Program};
use teil::fmt::Style;
use teil::CheckedProgram;
use teil::CodedError;
use teil_cbackend::ir::Kernel;
use teil_cbackend::plant::{self, Bug};
use teil_cbackend::run::{self, DriverError, Job, Outcome, Process, Toolchain};
use teil_cbackend::{validate, Options};
use teil_interp::random::mix;
use teil_interp::Tensor;

/// A final store: every variable's value (the oracle's and the fast evaluator's results).
pub type Store = BTreeMap<String, Tensor>;

/// Compiler flags of a campaign unless `--cflags` says otherwise. `-O0` keeps the compiler's
/// share of the time small enough for the throughput goal (spec/fuzzing.md measures it);
/// `-std=c99` rules out floating-point contraction, as spec/padding.md requires.
pub const DEFAULT_CFLAGS: &str = "-std=c99 -O0";

/// Padding multiples of a campaign unless `--pad` says otherwise: no padding; 3, which pads
/// dimensions of extent 1 and 2 but not 3 (the generator's extents are 1 to 3) and is not a
/// power of two; 8, which pads every dimension, by a common vector width. (4 would pad exactly
/// the dimensions 8 pads.)
pub const DEFAULT_PADS: [u64; 3] = [1, 3, 8];

/// Programs per translation unit unless configured otherwise. Larger chunks amortise the
/// compiler's start-up and the driver better; smaller ones leave less idle time at the end of a
/// campaign, when the last chunks run on fewer threads than there are cores. At 50, both costs
/// are a few percent of a 1000-program campaign on 2 cores (spec/fuzzing.md).
pub const DEFAULT_CHUNK: usize = 50;

/// What a campaign runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// How many programs (`None`: until [`Config::time`] runs out).
    pub programs: Option<u64>,
    /// The campaign seed; program `k` uses [`program_seed`]`(seed, k)`.
    pub seed: u64,
    /// Index of the first program (to re-run one program of a campaign: `skip = k`,
    /// `programs = 1`).
    pub skip: u64,
    /// Padding multiples at which the C backend runs: each program at the one drawn from its
    /// seed ([`drawn_pad`]), or at every one with [`Config::every_pad`].
    pub pads: Vec<u64>,
    /// Lower every program at every multiple of [`Config::pads`] (`--every-pad`) instead of at
    /// the one its seed draws.
    pub every_pad: bool,
    /// The kernel targets the C is compiled for, in turn ([`Isa::of`]); a replay compiles for
    /// the first. Default: [`Isa::host`] of the default flags.
    pub isas: Vec<Isa>,
    /// Worker threads (at most [`MAX_JOBS`]).
    pub jobs: usize,
    /// Stop starting new chunks of programs after this long.
    pub time: Option<Duration>,
    /// Programs per chunk: one translation unit and one driver process each (at most
    /// [`MAX_CHUNK`]).
    pub chunk: usize,
    /// The C compiler; its `cancel` flag also stops the campaign between programs, and its
    /// `timeout` bounds each compiler and driver run.
    pub toolchain: Toolchain,
    /// Whether to run the C backend at all.
    pub c_backend: bool,
    /// Whether to run the translation validator on one small kernel per program.
    pub validation: bool,
    /// A planted bug applied to every kernel (test-only; `teil_cbackend::plant`, hidden from
    /// these docs).
    pub plant: Option<Bug>,
    /// How many failing programs to shrink (the first ones, by index).
    pub shrink: usize,
    /// Where reproducers are written (`None`: nowhere).
    pub out: Option<PathBuf>,
    /// Stop starting new chunks once this many failing programs were found.
    pub stop_after: Option<usize>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            programs: Some(1000),
            seed: 0,
            skip: 0,
            pads: DEFAULT_PADS.to_vec(),
            every_pad: false,
            isas: Isa::host(
                &DEFAULT_CFLAGS
                    .split_whitespace()
                    .map(String::from)
                    .collect::<Vec<_>>(),
            ),
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            time: None,
            chunk: DEFAULT_CHUNK,
            toolchain: Toolchain::default().with_cflags(DEFAULT_CFLAGS),
            c_backend: true,
            validation: true,
            plant: None,
            shrink: 3,
            out: None,
            stop_after: None,
        }
    }
}

/// The most worker threads a campaign accepts: far more than any machine's cores, few enough
/// that starting them cannot fail.
pub const MAX_JOBS: usize = 1024;

/// The most programs per chunk. The chunk's programs are all held in memory at once, and its
/// kernels (about 4 per program) compile as one translation unit: at some 2.7 ms of compiler
/// time per kernel (spec/fuzzing.md), 10,000 programs take about two minutes, within the
/// default time-out.
pub const MAX_CHUNK: usize = 10_000;

/// The most cells a padded buffer of a generated program may have: 2^20, 8 MiB of doubles. A
/// chunk holds the buffers of a few hundred kernels in memory, twice (the driver's input and
/// output files), so beyond this a campaign needs gigabytes and crawls; at `M = 16` a rank-5
/// variable reaches it exactly ([`largest_padded_buffer`]).
pub const MAX_PADDED_CELLS: u64 = 1 << 20;

/// The number of cells of the largest padded buffer a generated program can have at padding
/// multiple `pad`, over every flavour ([`flavour`]): rank `max(max_rank, max_inner_rank)` with
/// every extent `max_extent` rounded up to a multiple of `pad`. `None` when it does not fit a
/// `u64`.
pub fn largest_padded_buffer(pad: u64) -> Option<u64> {
    (0..FLAVOURS.len() as u64).try_fold(0u64, |most, f| {
        let g = flavour(f);
        let rank = u32::try_from(g.max_rank.max(g.max_inner_rank)).ok()?;
        let extent = g.max_extent.checked_next_multiple_of(pad)?;
        Some(most.max(extent.checked_pow(rank)?))
    })
}

/// A campaign configuration that cannot run (`teil fuzz` reports it as a usage error before
/// running anything).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("`--programs 0`: a campaign needs at least one program")]
    NoPrograms,
    #[error("`--skip {skip} --programs {programs}` goes past the last program index (2^64 - 1)")]
    IndexOverflow { skip: u64, programs: u64 },
    #[error("`--pad` needs at least one padding multiple")]
    NoPads,
    #[error("`--pad`: every padding multiple must be at least 1, got {0}")]
    ZeroPad(u64),
    #[error("`--pad` names the padding multiple {0} twice")]
    DuplicatePad(u64),
    #[error(
        "`--pad {pad}`: a generated program can have a padded buffer of {cells} cells at this \
         multiple, more than the campaign's limit of {MAX_PADDED_CELLS} (multiples up to {max} fit)"
    )]
    PadTooLarge {
        pad: u64,
        cells: CellCount,
        max: u64,
    },
    #[error("`--jobs` must be at least 1")]
    NoJobs,
    #[error("`--jobs {0}`: at most {MAX_JOBS} worker threads")]
    TooManyJobs(usize),
    #[error("`--chunk {0}`: a chunk holds 1 to {MAX_CHUNK} programs")]
    BadChunk(usize),
    #[error("`--cc-timeout` must be more than 0 seconds")]
    NoTimeout,
}

/// A number of cells that may exceed `u64` (shown as `more than 2^64 - 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellCount(pub Option<u64>);

impl std::fmt::Display for CellCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(n) => write!(f, "{n}"),
            None => f.write_str("more than 2^64 - 1"),
        }
    }
}

impl Config {
    /// The kernel target the program at `index` is compiled for; a replay's (`None`): the
    /// first of [`Config::isas`].
    pub fn isa(&self, index: Option<u64>) -> Isa {
        match index {
            Some(i) => Isa::of(&self.isas, i),
            None => self.isas.first().copied().unwrap_or(Isa::Default),
        }
    }

    /// The toolchain that compiles for `isa`: its flags after the campaign's.
    pub fn toolchain_for(&self, isa: Isa) -> Toolchain {
        let mut tc = self.toolchain.clone();
        tc.cflags.extend(isa.flags().iter().map(|f| f.to_string()));
        tc
    }

    /// Checks that the campaign can run: at least one program whose index fits, padding
    /// multiples at which every generated program's buffers stay within [`MAX_PADDED_CELLS`]
    /// (a padding multiple beyond that would make every program "fail" to lower or to run,
    /// which is no finding), and job and chunk counts in range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(n) = self.programs {
            if n == 0 {
                return Err(ConfigError::NoPrograms);
            }
            // Program indices run from `skip` to `skip + n - 1`.
            if self.skip.checked_add(n - 1).is_none() {
                return Err(ConfigError::IndexOverflow {
                    skip: self.skip,
                    programs: n,
                });
            }
        }
        if self.pads.is_empty() {
            return Err(ConfigError::NoPads);
        }
        let max = (1..)
            .take_while(|&m| largest_padded_buffer(m).is_some_and(|c| c <= MAX_PADDED_CELLS))
            .last()
            .unwrap_or(1);
        for (i, &pad) in self.pads.iter().enumerate() {
            if pad == 0 {
                return Err(ConfigError::ZeroPad(pad));
            }
            if self.pads[..i].contains(&pad) {
                return Err(ConfigError::DuplicatePad(pad));
            }
            let cells = largest_padded_buffer(pad);
            if cells.is_none_or(|c| c > MAX_PADDED_CELLS) {
                return Err(ConfigError::PadTooLarge {
                    pad,
                    cells: CellCount(cells),
                    max,
                });
            }
        }
        if self.jobs == 0 {
            return Err(ConfigError::NoJobs);
        }
        if self.jobs > MAX_JOBS {
            return Err(ConfigError::TooManyJobs(self.jobs));
        }
        if !(1..=MAX_CHUNK).contains(&self.chunk) {
            return Err(ConfigError::BadChunk(self.chunk));
        }
        if self.toolchain.timeout.is_zero() {
            return Err(ConfigError::NoTimeout);
        }
        Ok(())
    }
}

/// The generator settings, by `index % 4`.
pub const FLAVOURS: [&str; 4] = ["plain", "division", "deep", "rank-5"];

/// The generator settings for program `index` (see [`FLAVOURS`]): the default settings; with
/// division; deeper, longer programs without qualifiers (every variable a parameter); ranks up
/// to 5 for declared variables.
pub fn flavour(index: u64) -> GenConfig {
    let base = GenConfig::default();
    match index % 4 {
        0 => base,
        1 => GenConfig {
            division: true,
            ..base
        },
        2 => GenConfig {
            max_depth: 5,
            max_stmts: 4,
            max_elements: 1024,
            qualifiers: false,
            ..base
        },
        _ => GenConfig {
            max_rank: 5,
            max_extent: 2,
            max_depth: 3,
            ..base
        },
    }
}

/// The seed of program `index` of the campaign with seed `seed`: it determines the program,
/// its inputs, its variants and its mutant.
pub fn program_seed(seed: u64, index: u64) -> u64 {
    mix(seed ^ mix(index))
}

/// The program with seed `seed`: drawn from `strategy` (the generator for its flavour,
/// [`flavour`]); for a quarter of the seeds one statement is then retargeted to a variable it
/// reads ([`inplace::retarget`]), for another quarter one statement gets a term reading its
/// target elsewhere ([`inplace::self_read`]). Returns whether the program was changed so.
pub fn generate(
    strategy: &impl proptest::strategy::Strategy<Value = Program>,
    seed: u64,
) -> (Program, bool) {
    let p = gen::sample(strategy, seed);
    let r = mix(seed ^ 0x696e_706c);
    let change: fn(&CheckedProgram, u64) -> Option<Program> = match r % 4 {
        0 => inplace::retarget,
        1 => inplace::self_read,
        _ => return (p, false),
    };
    match teil::check(p.clone()) {
        Ok((c, _)) => match change(&c, r >> 2) {
            Some(q) => (q, true),
            None => (p, false),
        },
        Err(_) => (p, false),
    }
}

/// Program `index` of a campaign, with program seed `seed`: a kernel-form template
/// ([`crate::forms`]) for four indices of every twenty, otherwise drawn from `strategy` (the
/// generator of the index's flavour) by [`generate`]. Returns whether the program was
/// retargeted.
pub fn program_at(
    strategy: &impl proptest::strategy::Strategy<Value = Program>,
    index: u64,
    seed: u64,
) -> (Program, bool) {
    match crate::forms::program(index, seed) {
        Some(p) => (p, false),
        None => generate(strategy, seed),
    }
}

/// A shrunk reproducer.
#[derive(Clone, Debug)]
pub struct Shrunk {
    pub program: Program,
    pub inputs: Inputs,
    /// The failure as seen on the shrunk program.
    pub failure: FailedCheck,
    /// The reproducer file, when one was written, and why writing failed otherwise.
    pub file: Option<Result<PathBuf, Arc<FileError>>>,
}

/// A program on which some check failed.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// Its index in the campaign (`None` for a replay).
    pub index: Option<u64>,
    /// Its seed ([`program_seed`]).
    pub seed: u64,
    pub failures: Vec<FailedCheck>,
    pub program: Program,
    pub inputs: Inputs,
    pub shrunk: Option<Shrunk>,
}

/// Counters of what a campaign did.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Programs whose checks all ran.
    pub programs: u64,
    /// Programs the oracle refused as too large (not mismatches).
    pub discarded: u64,
    /// Programs per flavour ([`FLAVOURS`]).
    pub by_flavour: [u64; 4],
    /// Programs with division.
    pub division: u64,
    /// Programs with a statement retargeted in place ([`generate`]).
    pub retargeted: u64,
    /// C kernel runs.
    pub kernels: u64,
    /// Kernel runs in which contraction lifting fired.
    pub lifted: u64,
    /// Lifted kernel runs compared within rounding ([`Tolerance::Rounding`]) rather than
    /// exactly.
    pub bounded: u64,
    /// Kernel runs in fma mode (compared within the bound of spec/values.md).
    pub fma: u64,
    /// Exact-mode kernel runs without lifting, of programs whose lifted kernel reassociates.
    pub unlifted: u64,
    /// Lifted kernel runs that differ from the oracle by a permitted result (spec/fuzzing.md,
    /// *Lifted kernels*: the kernel's values are its IR's, and the validator proves its terms).
    pub permitted: u64,
    /// Lifted kernel runs that differ from the oracle, too large to judge, whose values are
    /// their IR's and within the bound rule of the oracle's (spec/fuzzing.md, *Lifted kernels*).
    pub undecided: u64,
    /// Kernels the planted bug changed.
    pub planted: u64,
    /// C compiler runs.
    pub compiles: u64,
    /// Kernels the translation validator accepted.
    pub validated: u64,
    /// Kernels too large for the validator's bounds (not mismatches).
    pub not_validated: u64,
    /// Metamorphic variants evaluated (round trips, Core-TeIL, law chains).
    pub variants: u64,
    /// Law rewrites applied, by [`Law::ALL`] position.
    pub laws: [u64; 7],
    /// Ill-typed mutants checked.
    pub mutants: u64,
    pub cells: Cells,
    /// Where the time went, by phase ([`crate::profile`]).
    pub profile: Profile,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.programs += o.programs;
        self.discarded += o.discarded;
        for i in 0..4 {
            self.by_flavour[i] += o.by_flavour[i];
        }
        self.division += o.division;
        self.retargeted += o.retargeted;
        self.kernels += o.kernels;
        self.lifted += o.lifted;
        self.bounded += o.bounded;
        self.fma += o.fma;
        self.unlifted += o.unlifted;
        self.permitted += o.permitted;
        self.undecided += o.undecided;
        self.planted += o.planted;
        self.compiles += o.compiles;
        self.validated += o.validated;
        self.not_validated += o.not_validated;
        self.variants += o.variants;
        for i in 0..self.laws.len() {
            self.laws[i] += o.laws[i];
        }
        self.mutants += o.mutants;
        self.cells.add(o.cells);
        self.profile.add(&o.profile);
    }
}

impl<'a> From<&'a Config> for crate::repro::Origin<'a> {
    fn from(cfg: &'a Config) -> Self {
        crate::repro::Origin {
            seed: cfg.seed,
            pads: &cfg.pads,
            plant: cfg.plant,
        }
    }
}

/// Why a campaign ended before running every program.
#[derive(Clone, Debug, PartialEq)]
pub enum Stop {
    /// The toolchain's cancellation flag was set (`teil fuzz` sets it on SIGINT and SIGTERM).
    Interrupted,
    /// The environment failed in a way that says nothing about the programs: the C compiler
    /// did not finish within the time-out. `code` is the error's diagnostic code.
    Environment {
        code: Option<teil::Code>,
        message: String,
    },
}

impl Stop {
    fn from_driver_error(e: &DriverError) -> Option<Stop> {
        match e {
            DriverError::Interrupted => Some(Stop::Interrupted),
            DriverError::TimedOut {
                process: Process::Compiler(_),
                ..
            } => Some(Stop::Environment {
                code: e.code(),
                message: e.to_string(),
            }),
            _ => None,
        }
    }
}

/// What a campaign found.
#[derive(Clone, Debug)]
pub struct Report {
    /// What the programs that completed did (a chunk that was stopped counts for nothing).
    pub stats: Stats,
    /// Failing programs, by index.
    pub mismatches: Vec<Mismatch>,
    pub elapsed: Duration,
    /// Why the campaign ended early, if it did.
    pub stopped: Option<Stop>,
}

impl Report {
    /// Programs per second of wall time.
    pub fn rate(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.stats.programs as f64 / s
        } else {
            0.0
        }
    }

    /// The one-line summary: `N programs, K mismatches, R programs/s`, followed by
    /// `, interrupted` or `, stopped` when the campaign ended early.
    pub fn summary(&self) -> String {
        let end = match self.stopped {
            None => "",
            Some(Stop::Interrupted) => ", interrupted",
            Some(Stop::Environment { .. }) => ", stopped",
        };
        format!(
            "{}{end}",
            summary_line(self.stats.programs, self.mismatches.len(), self.rate())
        )
    }
}

/// The one line every campaign ends with (also the target campaigns of [`crate::target_campaign`]).
pub fn summary_line(programs: u64, mismatches: usize, rate: f64) -> String {
    format!("{programs} programs, {mismatches} mismatches, {rate:.1} programs/s")
}

/// Progress of a running campaign, reported after every chunk.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub done: u64,
    pub total: Option<u64>,
    pub mismatches: usize,
}

/// Runs a campaign. `progress` is called (from worker threads) after every chunk. The
/// configuration should have passed [`Config::validate`]; out-of-range counts are clamped.
pub fn run(cfg: &Config, progress: &(dyn Fn(Progress) + Sync)) -> Report {
    let start = Instant::now();
    let total = cfg.programs;
    let jobs = cfg.jobs.clamp(1, MAX_JOBS);
    let chunk = match total {
        Some(n) => (cfg.chunk as u64).min(n.div_ceil(jobs as u64)).max(1),
        None => cfg.chunk.clamp(1, MAX_CHUNK) as u64,
    };
    // No more threads than chunks.
    let jobs = match total {
        Some(n) => jobs.min(usize::try_from(n.div_ceil(chunk)).unwrap_or(jobs)),
        None => jobs,
    };
    let cancel = &cfg.toolchain.cancel;
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let failing = AtomicUsize::new(0);
    let results: Mutex<Vec<(Stats, Vec<Mismatch>)>> = Mutex::new(Vec::new());
    let stop: Mutex<Option<Stop>> = Mutex::new(None);
    let record = |s: Stop| {
        if let Ok(mut slot) = stop.lock() {
            slot.get_or_insert(s);
        }
    };
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                let mut gens: BTreeMap<u64, proptest::strategy::BoxedStrategy<Program>> =
                    BTreeMap::new();
                loop {
                    if cancel.is_cancelled() || stop.lock().map_or(true, |s| s.is_some()) {
                        break;
                    }
                    if cfg.time.is_some_and(|t| start.elapsed() >= t)
                        || cfg
                            .stop_after
                            .is_some_and(|n| failing.load(Ordering::SeqCst) >= n)
                    {
                        break;
                    }
                    let c = next.fetch_add(1, Ordering::SeqCst);
                    let first = c.saturating_mul(chunk);
                    let end = match total {
                        Some(n) => n.min(first.saturating_add(chunk)),
                        None => first.saturating_add(chunk),
                    };
                    if first >= end {
                        break;
                    }
                    let mut stats = Stats::default();
                    let mut programs = Vec::new();
                    for k in first..end {
                        if cancel.is_cancelled() {
                            break;
                        }
                        let index = cfg.skip.saturating_add(k);
                        let seed = program_seed(cfg.seed, index);
                        let strategy = gens
                            .entry(index % 4)
                            .or_insert_with(|| gen::program(flavour(index)));
                        let (p, retargeted) = stats
                            .profile
                            .time(Phase::Generate, || program_at(strategy, index, seed));
                        programs.push((index, seed, p));
                        stats.by_flavour[(index % 4) as usize] += 1;
                        stats.retargeted += u64::from(retargeted);
                    }
                    let found = match check_chunk(cfg, programs, &mut stats) {
                        Ok(found) => found,
                        Err(s) => {
                            record(s);
                            break;
                        }
                    };
                    failing.fetch_add(found.len(), Ordering::SeqCst);
                    let d = done.fetch_add(end - first, Ordering::SeqCst) + (end - first);
                    progress(Progress {
                        done: d,
                        total,
                        mismatches: failing.load(Ordering::SeqCst),
                    });
                    if let Ok(mut r) = results.lock() {
                        r.push((stats, found));
                    }
                }
            });
        }
    });
    let mut stats = Stats::default();
    let mut mismatches = Vec::new();
    for (s, m) in results.into_inner().unwrap_or_default() {
        stats.add(&s);
        mismatches.extend(m);
    }
    mismatches.sort_by_key(|m| m.index);
    // A campaign that ends early shrinks nothing: it was asked to stop, or cannot compile.
    let shrink = if stop.lock().map_or(true, |s| s.is_some()) || cancel.is_cancelled() {
        0
    } else {
        cfg.shrink
    };
    // The first failing programs by index, whichever thread found them: which programs are
    // shrunk does not depend on scheduling.
    let queue: Vec<Mutex<&mut Mismatch>> =
        mismatches.iter_mut().take(shrink).map(Mutex::new).collect();
    let next = AtomicUsize::new(0);
    let shrinking = Mutex::new(Profile::default());
    std::thread::scope(|s| {
        for _ in 0..jobs.min(queue.len()) {
            s.spawn(|| {
                while let Some(slot) = queue.get(next.fetch_add(1, Ordering::SeqCst)) {
                    if let Ok(mut m) = slot.lock() {
                        let started = Instant::now();
                        let shrunk = shrink_mismatch(cfg, &m);
                        if let Ok(mut p) = shrinking.lock() {
                            p.add_time(Phase::Shrink, started.elapsed());
                        }
                        match shrunk {
                            Ok(shrunk) => m.shrunk = shrunk,
                            Err(s) => {
                                record(s);
                                break;
                            }
                        }
                    }
                }
            });
        }
    });
    drop(queue);
    stats
        .profile
        .add(&shrinking.into_inner().unwrap_or_default());
    let mut stopped = stop.into_inner().unwrap_or_default();
    if stopped.is_none() && cancel.is_cancelled() {
        stopped = Some(Stop::Interrupted);
    }
    Report {
        stats,
        mismatches,
        elapsed: start.elapsed(),
        stopped,
    }
}

/// Runs every check on one given program and inputs (a reproducer), with `seed` choosing its
/// variants and mutant, the C backend at every multiple of `cfg.pads`. Nothing is shrunk.
pub fn replay(cfg: &Config, program: Program, inputs: Inputs, seed: u64) -> Report {
    // A reproducer names the multiples to run again (one, for a C check): all of them.
    let cfg = &Config {
        every_pad: true,
        ..cfg.clone()
    };
    let start = Instant::now();
    let mut stats = Stats::default();
    let mut stopped = None;
    let mismatches = match teil::check(program.clone()) {
        Err(d) => vec![Mismatch {
            index: None,
            seed,
            failures: vec![FailedCheck {
                check: Check::Generator,
                detail: codes(&d).to_string(),
            }],
            program,
            inputs,
            shrunk: None,
        }],
        Ok((checked, _)) => {
            let mut out = Vec::new();
            let ran = prepare(cfg, None, seed, checked, inputs, 0, &mut stats, &mut out)
                .and_then(|p| run_c(cfg, p.into_iter().collect(), &mut stats, &mut out));
            match ran {
                Ok(()) => out,
                Err(s) => {
                    stopped = Some(s);
                    stats = Stats::default();
                    Vec::new()
                }
            }
        }
    };
    Report {
        stats,
        mismatches,
        elapsed: start.elapsed(),
        stopped,
    }
}

/// A program that passed the interpreter-side checks, with its C kernels.
struct Prepared {
    index: Option<u64>,
    seed: u64,
    checked: CheckedProgram,
    inputs: Inputs,
    expected: Store,
    division: bool,
    kernels: Vec<(Check, Kernel)>,
    failures: Vec<FailedCheck>,
}

/// Checks a chunk of programs; `Err` when the campaign must stop before the chunk completed.
fn check_chunk(
    cfg: &Config,
    programs: Vec<(u64, u64, Program)>,
    stats: &mut Stats,
) -> Result<Vec<Mismatch>, Stop> {
    let mut out = Vec::new();
    let mut prepared = Vec::new();
    for (slot, (index, seed, program)) in programs.into_iter().enumerate() {
        if cfg.toolchain.cancel.is_cancelled() {
            return Err(Stop::Interrupted);
        }
        match stats
            .profile
            .time(Phase::Check, || teil::check(program.clone()))
        {
            Err(d) => out.push(Mismatch {
                index: Some(index),
                seed,
                failures: vec![FailedCheck {
                    check: Check::Generator,
                    detail: codes(&d).to_string(),
                }],
                program,
                inputs: Inputs::new(),
                shrunk: None,
            }),
            Ok((checked, _)) => {
                let inputs = teil_interp::random_inputs(&checked, seed);
                prepared.extend(prepare(
                    cfg,
                    Some(index),
                    seed,
                    checked,
                    inputs,
                    slot,
                    stats,
                    &mut out,
                )?);
            }
        }
    }
    run_c(cfg, prepared, stats, &mut out)?;
    out.sort_by_key(|m| m.index);
    Ok(out)
}

fn codes(d: &[teil::Diagnostic]) -> Codes {
    let codes: BTreeSet<&'static str> = d
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.code.as_str())
        .collect();
    Codes(codes.into_iter().collect())
}

fn has_division(p: &CheckedProgram) -> bool {
    let mut found = false;
    for s in &p.program().stmts {
        s.value.walk(&mut |e| {
            found |= matches!(e.kind, ExprKind::Binary(BinOp::Div, ..));
        });
    }
    found
}

/// The interpreter-side checks of one program (steps 1 to 4 of the module documentation) and
/// its lowered kernels; their failures travel with the result. A program on which the oracle
/// fails is pushed to `out` at once; one the oracle refuses as too large is discarded.
/// `Err` when the campaign must stop.
#[allow(clippy::too_many_arguments)]
fn prepare(
    cfg: &Config,
    index: Option<u64>,
    seed: u64,
    checked: CheckedProgram,
    inputs: Inputs,
    slot: usize,
    stats: &mut Stats,
    out: &mut Vec<Mismatch>,
) -> Result<Option<Prepared>, Stop> {
    let fail = |failures: Vec<FailedCheck>, checked: &CheckedProgram, inputs: &Inputs| Mismatch {
        index,
        seed,
        failures,
        program: checked.program().clone(),
        inputs: inputs.clone(),
        shrunk: None,
    };
    let expected = match stats
        .profile
        .time(Phase::Oracle, || teil_interp::run_oracle(&checked, &inputs))
    {
        Ok(e) => e,
        Err(e) if e.is_internal() => {
            let f = FailedCheck {
                check: Check::Oracle,
                detail: e.to_string(),
            };
            out.push(fail(vec![f], &checked, &inputs));
            return Ok(None);
        }
        Err(_) => {
            stats.discarded += 1;
            return Ok(None);
        }
    };
    let division = has_division(&checked);
    stats.division += u64::from(division);
    let mut failures = Vec::new();
    let mut interpreter_checks = vec![
        Check::Fast,
        Check::RoundTrip(Style::Prefix),
        Check::RoundTrip(Style::Infix),
        Check::Core,
    ];
    // The law chain and the mutant are determined by the seed; `Laws` records which laws it
    // applied, `IllTyped` the mutation.
    match law_variant(&checked, seed) {
        Ok(Some((_, applied))) => {
            for l in &applied {
                if let Some(i) = Law::ALL.iter().position(|x| x == l) {
                    stats.laws[i] += 1;
                }
            }
            interpreter_checks.push(Check::Laws(applied));
        }
        Ok(None) => {}
        Err(detail) => failures.push(FailedCheck {
            check: Check::Laws(Vec::new()),
            detail: detail.to_string(),
        }),
    }
    if let Some((mutation, choice)) = pick_mutant(&checked, seed) {
        stats.mutants += 1;
        interpreter_checks.push(Check::IllTyped { mutation, choice });
    }
    for check in interpreter_checks {
        if cfg.toolchain.cancel.is_cancelled() {
            return Err(Stop::Interrupted);
        }
        if matches!(check, Check::RoundTrip(_) | Check::Core | Check::Laws(_)) {
            stats.variants += 1;
        }
        let started = Instant::now();
        let result = run_check(cfg, &check, &checked, &inputs, &expected, seed, stats);
        if let Some(phase) = check.phase() {
            stats.profile.add_time(phase, started.elapsed());
        }
        match result {
            Ok(()) => {}
            Err(NotPassed::Failed(detail)) => failures.push(FailedCheck {
                check,
                detail: detail.to_string(),
            }),
            Err(NotPassed::Stopped(s)) => return Err(s),
        }
    }
    let mut kernels = Vec::new();
    let isa = cfg.isa(index);
    let drawn = drawn_pad(&cfg.pads, seed);
    // The multiples of the lifted kernels, and the one of the unlifted exact and fma kernels.
    let (lifted_pads, unlifted_pad) = if cfg.every_pad {
        (cfg.pads.clone(), cfg.pads.first().copied())
    } else {
        (drawn.into_iter().collect(), drawn)
    };
    if cfg.c_backend {
        let mut reassociated_somewhere = false;
        for &pad in &lifted_pads {
            let name = format!("p{slot}_m{pad}");
            match lower(cfg, &checked, pad, true, false, &name, stats) {
                Ok(k) => {
                    reassociated_somewhere |= k.reassociates();
                    let check = Check::C {
                        pad,
                        lift: true,
                        fma: false,
                        isa,
                    };
                    kernels.push((check, k));
                }
                Err(detail) => failures.push(FailedCheck {
                    check: Check::Lower { pad },
                    detail: detail.to_string(),
                }),
            }
        }
        // A lifted program (or one with a sum in lanes) also runs once without
        // reassociation, where it must agree bit for bit.
        if let (true, Some(pad)) = (reassociated_somewhere, unlifted_pad) {
            let name = format!("p{slot}_m{pad}_exact");
            match lower(cfg, &checked, pad, false, false, &name, stats) {
                Ok(k) => {
                    let check = Check::C {
                        pad,
                        lift: false,
                        fma: false,
                        isa,
                    };
                    kernels.push((check, k));
                }
                Err(detail) => failures.push(FailedCheck {
                    check: Check::Lower { pad },
                    detail: detail.to_string(),
                }),
            }
        }
        // A program with a product-then-add also runs in fma mode, unlifted (so that it
        // evaluates the oracle's own term, whose bound the oracle computes), at the same `M`.
        if let Some(pad) = unlifted_pad {
            let name = format!("p{slot}_m{pad}_fma");
            match lower(cfg, &checked, pad, false, true, &name, stats) {
                Ok(k) if k.has_fusable() => {
                    let check = Check::C {
                        pad,
                        lift: false,
                        fma: true,
                        isa,
                    };
                    kernels.push((check, k));
                }
                Ok(_) => {}
                Err(detail) => failures.push(FailedCheck {
                    check: Check::Lower { pad },
                    detail: detail.to_string(),
                }),
            }
        }
    }
    // One kernel per program also goes through the translation validator, when it is small
    // enough for symbolic evaluation: the lifted kernel at the drawn multiple, so that a replay
    // with just that multiple validates the same kernel.
    let kernel = kernels.iter().find(|(c, _)| {
        Some(c)
            == drawn
                .map(|pad| Check::C {
                    pad,
                    lift: true,
                    fma: false,
                    isa,
                })
                .as_ref()
    });
    if let Some((_, k)) = kernel.filter(|_| cfg.validation) {
        if let Err(detail) = validate(&checked, k, stats) {
            failures.push(FailedCheck {
                check: Check::Validate { pad: k.pad },
                detail: detail.to_string(),
            });
        }
    }
    Ok(Some(Prepared {
        index,
        seed,
        checked,
        inputs,
        expected,
        division,
        kernels,
        failures,
    }))
}

/// The kernel target of a C check (the default for the others, which compile nothing).
fn check_isa(c: &Check) -> Isa {
    match c {
        Check::C { isa, .. } => *isa,
        _ => Isa::Default,
    }
}

/// The padding multiple of `pads` that the program of `seed` is lowered at (unless
/// [`Config::every_pad`]) and whose lifted kernel is validated. A reproducer of a C check
/// records that one multiple, and replaying it draws it again.
pub fn drawn_pad(pads: &[u64], seed: u64) -> Option<u64> {
    let i = seed % pads.len().max(1) as u64;
    pads.get(usize::try_from(i).ok()?).copied()
}

fn lower(
    cfg: &Config,
    checked: &CheckedProgram,
    pad: u64,
    lift: bool,
    fma: bool,
    name: &str,
    stats: &mut Stats,
) -> Result<Kernel, CheckFailed> {
    let opts = Options {
        pad,
        name: name.to_string(),
        lift,
        fma,
        openmp: false,
        // The reference machine's sizes on every machine, so that a campaign and its
        // reproducers print the same C wherever they run.
        sizes: Default::default(),
    };
    let lowered = stats.profile.time(Phase::Lower, || {
        guarded(|| teil_cbackend::lower(checked, &opts))
    });
    let mut k = lowered?.map_err(CheckFailed::Lowering)?;
    if let Some(bug) = cfg.plant {
        if plant::apply(&mut k, bug) {
            stats.planted += 1;
        }
    }
    Ok(k)
}

/// Bounds of the validator in a campaign: small shapes only (the defaults of
/// `teil_cbackend::validate` allow far larger programs, at seconds each).
fn validation_limits() -> validate::Limits {
    validate::Limits {
        max_operations: VALIDATION_OPERATIONS,
        max_cells: VALIDATION_CELLS,
        ..validate::Limits::default()
    }
}

/// Largest symbolic work (oracle operations plus kernel work) of a validated kernel.
pub const VALIDATION_OPERATIONS: u128 = 20_000;

/// Largest number of cells (padded parameters and workspace) of a validated kernel. Checking
/// every padding cell symbolically is what makes validation slow at large `M`: at `M = 8` a
/// rank-4 buffer alone has 4096 cells.
pub const VALIDATION_CELLS: u64 = 20_000;

/// Validates `k`; `Err` when the validator shows it wrong. Kernels beyond the bounds count as
/// not validated.
fn validate(checked: &CheckedProgram, k: &Kernel, stats: &mut Stats) -> Result<(), CheckFailed> {
    let validated = stats.profile.time(Phase::Validate, || {
        guarded(|| validate::validate_with(checked, k, &validation_limits()))
    });
    match validated? {
        Ok(_) => {
            stats.validated += 1;
            Ok(())
        }
        Err(f) if f.is_rejection() => Err(CheckFailed::Rejected(f)),
        Err(_) => {
            stats.not_validated += 1;
            Ok(())
        }
    }
}

/// Runs every kernel of `prepared` in one batch and turns every program with a failure into a
/// [`Mismatch`].
fn run_c(
    cfg: &Config,
    prepared: Vec<Prepared>,
    stats: &mut Stats,
    out: &mut Vec<Mismatch>,
) -> Result<(), Stop> {
    let runs: Vec<(Isa, &Kernel, &Inputs)> = prepared
        .iter()
        .flat_map(|p| {
            p.kernels
                .iter()
                .map(move |(c, k)| (check_isa(c), k, &p.inputs))
        })
        .collect();
    // One batch (translation unit, driver) per kernel target, in the order they first appear.
    let mut outcomes: Vec<Option<Result<Outcome, CheckFailed>>> = Vec::new();
    outcomes.resize_with(runs.len(), || None);
    let mut isas: Vec<Isa> = runs.iter().map(|r| r.0).collect();
    isas.dedup();
    let mut done = Vec::new();
    for isa in isas {
        if done.contains(&isa) {
            continue;
        }
        done.push(isa);
        let (at, batch): (Vec<usize>, Vec<(&Kernel, &Inputs)>) = runs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.0 == isa)
            .map(|(i, r)| (i, (r.1, r.2)))
            .unzip();
        let results = run_kernels(&cfg.toolchain_for(isa), &batch, stats)?;
        for (i, o) in at.into_iter().zip(results) {
            outcomes[i] = Some(o);
        }
    }
    let mut outcomes = outcomes
        .into_iter()
        .map(|o| o.unwrap_or(Err(CheckFailed::TooFewResults)));
    for p in prepared {
        let mut failures = p.failures.clone();
        stats.programs += 1;
        for (check, k) in &p.kernels {
            let outcome = outcomes
                .next()
                .unwrap_or_else(|| Err(CheckFailed::TooFewResults));
            stats.kernels += 1;
            stats.lifted += u64::from(k.lifted > 0);
            stats.unlifted += u64::from(matches!(
                check,
                Check::C {
                    lift: false,
                    fma: false,
                    ..
                }
            ));
            let started = Instant::now();
            let result = outcome.and_then(|o| {
                compare_c(&p.checked, &p.inputs, &p.expected, p.division, k, &o, stats)
            });
            stats.profile.add_time(Phase::Compare, started.elapsed());
            if let Err(detail) = result {
                failures.push(FailedCheck {
                    check: check.clone(),
                    detail: detail.to_string(),
                });
            }
        }
        if !failures.is_empty() {
            out.push(Mismatch {
                index: p.index,
                seed: p.seed,
                failures,
                program: p.checked.program().clone(),
                inputs: p.inputs,
                shrunk: None,
            });
        }
    }
    Ok(())
}

/// Runs `runs` in one driver process; when the batch fails (a compile error, a crash, a driver
/// that times out), splits it until the failing kernels are isolated. One result per run, in
/// order. `Err` when the campaign must stop (interrupted, or the compiler timed out).
fn run_kernels(
    tc: &Toolchain,
    runs: &[(&Kernel, &Inputs)],
    stats: &mut Stats,
) -> Result<Vec<Result<Outcome, CheckFailed>>, Stop> {
    let kernels: Vec<&Kernel> = runs.iter().map(|r| r.0).collect();
    let jobs: Vec<Job> = runs
        .iter()
        .enumerate()
        .map(|(kernel, r)| Job {
            kernel,
            inputs: r.1.clone(),
        })
        .collect();
    stats.compiles += 1;
    let mut times = run::BatchTimes::default();
    let ran = guarded(|| run::run_batch_timed(tc, &kernels, &jobs, &mut times));
    stats.profile.add_time(Phase::Compile, times.compile);
    stats.profile.add_time(Phase::Driver, times.driver);
    let result = match ran {
        Ok(Ok(o)) => Ok(o),
        Ok(Err(e)) => {
            if let Some(stop) = Stop::from_driver_error(&e) {
                return Err(stop);
            }
            // The source of a batch that is split further is not interesting on its own.
            if runs.len() > 1 {
                remove_kept(&e);
            }
            Err(CheckFailed::Run(e))
        }
        Err(panic) => Err(panic),
    };
    Ok(match result {
        Ok(o) if o.len() == runs.len() => o.into_iter().map(Ok).collect(),
        Ok(_) => (0..runs.len())
            .map(|_| Err(CheckFailed::WrongCount))
            .collect(),
        Err(e) if runs.len() == 1 => vec![Err(CheckFailed::DidNotRun(Box::new(e)))],
        Err(_) => {
            let (a, b) = runs.split_at(runs.len() / 2);
            let mut out = run_kernels(tc, a, stats)?;
            out.extend(run_kernels(tc, b, stats)?);
            out
        }
    })
}

/// Runs `f`, turning a panic (a bug in the code under test) into an error.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, CheckFailed> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_string());
        CheckFailed::Panicked(msg)
    })
}

fn remove_kept(e: &run::DriverError) {
    let kept = match e {
        run::DriverError::CompilerNotFound { kept, .. }
        | run::DriverError::CompileFailed { kept, .. }
        | run::DriverError::KernelFailed { kept, .. } => kept,
        _ => return,
    };
    if let Some(dir) = kept.parent() {
        if dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("teil-cc-"))
        {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The C backend's results against the oracle's (spec/fuzzing.md): outputs equal (exactly,
/// or within the bound for lifted kernels that round), padding zero, inputs untouched.
fn compare_c(
    checked: &CheckedProgram,
    inputs: &Inputs,
    expected: &Store,
    division: bool,
    k: &Kernel,
    o: &Outcome,
    stats: &mut Stats,
) -> Result<(), CheckFailed> {
    if !o.nonzero_padding.is_empty() {
        return Err(CheckFailed::NonzeroPadding {
            names: o.nonzero_padding.clone(),
        });
    }
    let outputs = checked.output_names();
    let label = format!("C backend at M = {}", k.pad);
    if k.fma {
        // Unlifted: the oracle's own term, with the bound of spec/values.md per cell.
        stats.fma += 1;
        let bounds =
            teil_interp::rounding::fma_bounds(checked, inputs).map_err(CheckFailed::FmaBound)?;
        let label = format!("{label} in fma mode");
        let cells =
            compare::stores_within(&outputs, expected, &o.values, &bounds, ("oracle", &label))?;
        stats.cells.add(cells);
        return compare_inputs(checked, inputs, o);
    }
    let exact = !k.reassociates()
        || (!division && compare::small_integers(outputs.iter().filter_map(|n| expected.get(n))));
    stats.bounded += u64::from(!exact);
    let tol = if exact {
        Tolerance::Exact
    } else {
        Tolerance::Rounding
    };
    match compare::stores(&outputs, expected, &o.values, tol, ("oracle", &label)) {
        Ok(cells) => stats.cells.add(cells),
        // Lifting and sums in lanes may give another permitted result than the oracle's
        // canonical one.
        Err(detail) if k.reassociates() => {
            let fallback = (!exact).then_some(Tolerance::Bound);
            judge_lifted(checked, inputs, expected, k, o, detail, fallback, stats)?
        }
        Err(detail) => return Err(detail.into()),
    }
    compare_inputs(checked, inputs, o)
}

/// Largest symbolic work of a kernel judged after its comparison with the oracle failed. Only
/// those few kernels are validated, so the bound is far above the campaign's sampling bound
/// ([`VALIDATION_OPERATIONS`]): a second or so of symbolic evaluation at most.
pub const JUDGE_OPERATIONS: u128 = 1_000_000;

/// Largest number of cells of a kernel judged after its comparison with the oracle failed.
pub const JUDGE_CELLS: u64 = 1 << 18;

/// The judgement of spec/fuzzing.md (*Lifted kernels*) on a lifted kernel whose outputs differ
/// from the oracle's (`detail`): permitted when the compiled kernel returned its IR's binary64
/// values and the validator proves every output cell `eval(T′)` for a `T′ ≡ T`
/// (`teil_cbackend::validate::judge`); otherwise a mismatch, saying which law, if any, is
/// behind the difference. A kernel too large to validate whose values are its IR's is compared
/// with the oracle again under `fallback` (the bound rule; `None`: the difference stands).
#[allow(clippy::too_many_arguments)]
fn judge_lifted(
    checked: &CheckedProgram,
    inputs: &Inputs,
    expected: &Store,
    k: &Kernel,
    o: &Outcome,
    detail: Difference,
    fallback: Option<Tolerance>,
    stats: &mut Stats,
) -> Result<(), CheckFailed> {
    let limits = validate::Limits {
        max_operations: JUDGE_OPERATIONS,
        max_cells: JUDGE_CELLS,
        ..validate::Limits::default()
    };
    let verdict = guarded(|| validate::judge(checked, k, inputs, &o.values, &limits))?;
    let judgement = match verdict {
        validate::Judgement::Permitted(_) => {
            stats.permitted += 1;
            return Ok(());
        }
        validate::Judgement::NotTheIr {
            target,
            var,
            index,
            ir,
            kernel,
        } => NotPermitted::NotTheIr {
            target,
            var,
            index,
            ir,
            kernel,
        },
        validate::Judgement::Rejected(f) => NotPermitted::Rejected(f),
        validate::Judgement::Undecided(f) => {
            let outputs = checked.output_names();
            let label = format!("C backend at M = {}", k.pad);
            let again = fallback
                .map(|tol| compare::stores(&outputs, expected, &o.values, tol, ("oracle", &label)));
            if let Some(Ok(cells)) = again {
                stats.undecided += 1;
                stats.cells.add(cells);
                return Ok(());
            }
            NotPermitted::Undecided(f)
        }
    };
    Err(CheckFailed::Judged {
        difference: Box::new(detail),
        judgement: Box::new(judgement),
    })
}

/// Input-only parameters are left as the caller gave them.
fn compare_inputs(
    checked: &CheckedProgram,
    inputs: &Inputs,
    o: &Outcome,
) -> Result<(), CheckFailed> {
    for d in checked
        .interface()
        .filter(|d| checked.is_input(d) && !checked.is_output(d))
    {
        let name = &d.name.name;
        if let (Some(given), Some(after)) = (inputs.get(name), o.values.get(name)) {
            compare::tensors(name, given, after, Tolerance::Exact, ("input", "kernel"))
                .map_err(|d| CheckFailed::WroteInput(Box::new(d)))?;
        }
    }
    Ok(())
}

/// The tolerance between the oracle and an evaluator that reassociates (the fast evaluator).
fn fast_tolerance(division: bool) -> Tolerance {
    if division {
        Tolerance::Loose
    } else {
        Tolerance::Exact
    }
}

fn names(s: &Store) -> Vec<String> {
    s.keys().cloned().collect()
}

/// Why a check did not pass.
enum NotPassed {
    /// The check failed; how.
    Failed(CheckFailed),
    /// The check could not run to its end (only the C check can stop so).
    Stopped(Stop),
}

impl From<CheckFailed> for NotPassed {
    fn from(detail: CheckFailed) -> Self {
        NotPassed::Failed(detail)
    }
}

impl From<Difference> for NotPassed {
    fn from(detail: Difference) -> Self {
        NotPassed::Failed(detail.into())
    }
}

/// Runs one non-C check (or one C kernel, compiled on its own) on a program whose oracle
/// results are `expected`. `Err` says how it failed.
fn run_check(
    cfg: &Config,
    check: &Check,
    c: &CheckedProgram,
    inputs: &Inputs,
    expected: &Store,
    seed: u64,
    stats: &mut Stats,
) -> Result<(), NotPassed> {
    let division = has_division(c);
    let all = names(expected);
    match check {
        Check::Generator | Check::Oracle => Ok(()),
        Check::Fast => {
            let got = teil_interp::run_fast(c, inputs).map_err(CheckFailed::Fast)?;
            let cells = compare::stores(
                &all,
                expected,
                &got,
                fast_tolerance(division),
                ("oracle", "fast evaluator"),
            )?;
            stats.cells.add(cells);
            Ok(())
        }
        Check::RoundTrip(style) => {
            let text = teil::fmt::program(c.program(), *style);
            let parsed = teil::parse(&text);
            if parsed.diagnostics.iter().any(|d| d.is_error()) {
                return Err(CheckFailed::DoesNotParse {
                    codes: codes(&parsed.diagnostics),
                    text,
                }
                .into());
            }
            if !parsed.program.same_as(c.program()) {
                return Err(CheckFailed::AnotherProgram { text }.into());
            }
            let (again, _) = teil::check(parsed.program)
                .map_err(|d| CheckFailed::ReparsedDoesNotCheck(codes(&d)))?;
            Ok(evaluate_variant(
                &again, inputs, expected, division, false, stats,
            )?)
        }
        Check::Core => {
            let core = teil::core::desugar(c).map_err(|d| CheckFailed::Desugar {
                code: d.code.as_str(),
                message: d.message,
            })?;
            let (core, _) =
                teil::check(core).map_err(|d| CheckFailed::CoreDoesNotCheck(codes(&d)))?;
            Ok(evaluate_variant(
                &core, inputs, expected, division, true, stats,
            )?)
        }
        Check::Laws(_) => match law_variant(c, seed)? {
            None => Ok(()),
            Some((variant, _)) => {
                evaluate_variant(&variant, inputs, expected, division, true, stats).map_err(|e| {
                    NotPassed::Failed(CheckFailed::LawVariant {
                        failed: Box::new(e),
                        text: teil::fmt::program(variant.program(), Style::Infix),
                    })
                })
            }
        },
        Check::IllTyped { mutation, choice } => {
            let Some(bad) = mutate::ill_typed(c, *mutation, *choice) else {
                return Ok(());
            };
            let style = if seed % 2 == 0 {
                Style::Prefix
            } else {
                Style::Infix
            };
            let text = teil::fmt::program(&bad, style);
            let want = BTreeSet::from([mutation.expected().as_str()]);
            match teil::compile(&text) {
                Ok(_) => Err(CheckFailed::MutantAccepted { text }.into()),
                Err(d) => {
                    let got: BTreeSet<&'static str> = d
                        .iter()
                        .filter(|d| d.is_error())
                        .map(|d| d.code.as_str())
                        .collect();
                    if got == want {
                        Ok(())
                    } else {
                        Err(CheckFailed::MutantCodes {
                            expected: mutation.expected().as_str(),
                            reported: got.into_iter().collect(),
                            text,
                        }
                        .into())
                    }
                }
            }
        }
        Check::Lower { pad } => {
            Ok(lower(cfg, c, *pad, true, false, "teil_kernel", stats).map(|_| ())?)
        }
        Check::Validate { pad } => {
            let k = lower(cfg, c, *pad, true, false, "teil_kernel", stats)?;
            Ok(validate(c, &k, stats)?)
        }
        Check::C {
            pad,
            lift,
            fma,
            isa,
        } => {
            let k = lower(cfg, c, *pad, *lift, *fma, "teil_kernel", stats)?;
            let runs = [(&k, inputs)];
            let o = run_kernels(&cfg.toolchain_for(*isa), &runs, stats)
                .map_err(NotPassed::Stopped)?
                .pop()
                .unwrap_or_else(|| Err(CheckFailed::NoResult))?;
            Ok(compare_c(c, inputs, expected, division, &k, &o, stats)?)
        }
    }
}

/// A variant must give the original's store: under the oracle bit for bit when `exact_oracle`
/// (law rewrites and Core-TeIL perform the same operations on the same cells), and under the
/// fast evaluator within its tolerance.
fn evaluate_variant(
    v: &CheckedProgram,
    inputs: &Inputs,
    expected: &Store,
    division: bool,
    oracle: bool,
    stats: &mut Stats,
) -> Result<(), CheckFailed> {
    let all = names(expected);
    if oracle {
        let got = teil_interp::run_oracle(v, inputs).map_err(CheckFailed::OracleOnVariant)?;
        let cells = compare::stores(
            &all,
            expected,
            &got,
            Tolerance::Exact,
            ("oracle", "variant"),
        )?;
        stats.cells.add(cells);
    }
    let got = teil_interp::run_fast(v, inputs).map_err(CheckFailed::FastOnVariant)?;
    let cells = compare::stores(
        &all,
        expected,
        &got,
        fast_tolerance(division),
        ("oracle", "fast evaluator on the variant"),
    )?;
    stats.cells.add(cells);
    Ok(())
}

/// Number of law rewrites chained in one variant.
const LAW_CHAIN: usize = 3;

/// The law variant of `c` for `seed`: `LAW_CHAIN` rewrites, each by the first law (from a
/// seed-chosen starting point in [`Law::ALL`]) that applies. `Err` when a rewrite produced an
/// ill-typed program.
#[allow(clippy::type_complexity)]
pub fn law_variant(
    c: &CheckedProgram,
    seed: u64,
) -> Result<Option<(CheckedProgram, Vec<Law>)>, CheckFailed> {
    let mut state = seed ^ 0x6c61_7773;
    let mut cur: Option<CheckedProgram> = None;
    let mut applied = Vec::new();
    for _ in 0..LAW_CHAIN {
        state = mix(state);
        let start = (state % Law::ALL.len() as u64) as usize;
        state = mix(state);
        let choice = state;
        let base = cur.as_ref().unwrap_or(c);
        let found = (0..Law::ALL.len()).find_map(|t| {
            let law = Law::ALL[(start + t) % Law::ALL.len()];
            laws::rewrite(base, law, choice).map(|p| (law, p))
        });
        let Some((law, p)) = found else {
            break;
        };
        let text = teil::fmt::program(&p, Style::Infix);
        let (checked, _) = teil::check(p).map_err(|d| CheckFailed::IllTypedRewrite {
            equation: law.equation(),
            codes: codes(&d),
            text,
        })?;
        applied.push(law);
        cur = Some(checked);
    }
    Ok(cur.map(|c| (c, applied)))
}

/// The mutation for `seed`: the first of [`Mutation::ALL`], from a seed-chosen starting point,
/// that applies to the program.
fn pick_mutant(c: &CheckedProgram, seed: u64) -> Option<(Mutation, usize)> {
    let n = Mutation::ALL.len();
    let start = (mix(seed ^ 0x6d75_7461) % n as u64) as usize;
    let choice = (seed >> 16) as usize;
    (0..n)
        .map(|t| Mutation::ALL[(start + t) % n])
        .find(|&m| mutate::ill_typed(c, m, choice).is_some())
        .map(|m| (m, choice))
}

/// Shrinks a mismatch by one of its failures (a C run if there is one) and writes the
/// reproducer. `Err` when the campaign must stop: nothing is written then.
fn shrink_mismatch(cfg: &Config, m: &Mismatch) -> Result<Option<Shrunk>, Stop> {
    // A run of the C backend with concrete wrong values makes the most convincing reproducer.
    let first = m
        .failures
        .iter()
        .find(|f| matches!(f.check, Check::C { .. }))
        .or_else(|| m.failures.iter().find(|f| f.check != Check::Generator));
    let Some(first) = first.cloned() else {
        return Ok(None);
    };
    let check = first.check.clone();
    let seed = m.seed;
    let mut scratch = Stats::default();
    // Once the campaign must stop, every further candidate "passes", so the shrinker runs out
    // of candidates at once; its result is then dropped.
    let mut stopped: Option<Stop> = None;
    let fails = |c: &CheckedProgram, inputs: &Inputs| -> bool {
        if stopped.is_none() && cfg.toolchain.cancel.is_cancelled() {
            stopped = Some(Stop::Interrupted);
        }
        if stopped.is_some() {
            return false;
        }
        let mut stats = Stats::default();
        match teil_interp::run_oracle(c, inputs) {
            Err(e) => check == Check::Oracle && e.is_internal(),
            Ok(_) if check == Check::Oracle => false,
            Ok(expected) => match run_check(cfg, &check, c, inputs, &expected, seed, &mut stats) {
                Ok(()) => false,
                Err(NotPassed::Failed(_)) => true,
                Err(NotPassed::Stopped(s)) => {
                    stopped = Some(s);
                    false
                }
            },
        }
    };
    let (program, inputs) = shrink::shrink(
        m.program.clone(),
        m.inputs.clone(),
        fails,
        check.shrink_budget(),
    );
    if let Some(s) = stopped {
        return Err(s);
    }
    let Ok((checked, _)) = teil::check(program.clone()) else {
        return Ok(None);
    };
    let detail = match teil_interp::run_oracle(&checked, &inputs) {
        Err(e) => e.to_string(),
        Ok(expected) => match run_check(
            cfg,
            &check,
            &checked,
            &inputs,
            &expected,
            seed,
            &mut scratch,
        ) {
            Ok(()) => first.detail.clone(),
            Err(NotPassed::Failed(detail)) => detail.to_string(),
            Err(NotPassed::Stopped(s)) => return Err(s),
        },
    };
    let failure = FailedCheck { check, detail };
    let file = cfg.out.as_ref().map(|dir| {
        crate::repro::write(dir, cfg, seed, &failure, &program, &inputs, m.index).map_err(Arc::new)
    });
    Ok(Some(Shrunk {
        program,
        inputs,
        failure,
        file,
    }))
}
