//! A campaign's configuration, its limits, and the program each index and seed stand for.

use crate::gen::{self, GenConfig};
use crate::inplace;
use crate::isa::Isa;
use std::path::PathBuf;
use std::time::Duration;
use teil::ast::Program;
use teil::CheckedProgram;
use teil_cbackend::plant::Bug;
use teil_cbackend::run::Toolchain;
use teil_interp::random::mix;

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
/// to 5 for declared variables. Every flavour draws the functions, and binary32 for half its
/// programs.
pub fn flavour(index: u64) -> GenConfig {
    let base = GenConfig {
        functions: true,
        binary32: true,
        ..GenConfig::default()
    };
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

/// The padding multiple of `pads` that the program of `seed` is lowered at (unless
/// [`Config::every_pad`]) and whose lifted kernel is validated. A reproducer of a C check
/// records that one multiple, and replaying it draws it again.
pub fn drawn_pad(pads: &[u64], seed: u64) -> Option<u64> {
    let i = seed % pads.len().max(1) as u64;
    pads.get(usize::try_from(i).ok()?).copied()
}
