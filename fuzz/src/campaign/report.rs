//! What a campaign found: its mismatches, statistics, why it stopped, and its report.

use super::config::Config;
use crate::check::FailedCheck;
use crate::compare::Cells;
use crate::error::FileError;
use crate::profile::Profile;
use crate::shrink::Inputs;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use teil::ast::Program;
use teil::CodedError;
use teil_cbackend::run::{DriverError, Process};

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
    /// Its seed ([`program_seed`](super::program_seed)).
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
    /// Programs per flavour ([`FLAVOURS`](super::FLAVOURS)).
    pub by_flavour: [u64; 4],
    /// Programs with division.
    pub division: u64,
    /// Programs whose variables are binary32.
    pub binary32: u64,
    /// Programs with a function (`exp`, ..., `max`, `min`) or a conversion.
    pub functions: u64,
    /// Programs with a statement retargeted in place ([`generate`](super::generate)).
    pub retargeted: u64,
    /// C kernel runs.
    pub kernels: u64,
    /// Kernel runs in which contraction lifting fired.
    pub lifted: u64,
    /// Lifted kernel runs compared within rounding
    /// ([`Tolerance::Rounding`](crate::compare::Tolerance::Rounding)) rather than exactly.
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
    /// Law rewrites applied, by [`Law::ALL`](crate::laws::Law::ALL) position.
    pub laws: [u64; 7],
    /// Ill-typed mutants checked.
    pub mutants: u64,
    pub cells: Cells,
    /// Where the time went, by phase ([`crate::profile`]).
    pub profile: Profile,
}

impl Stats {
    pub(super) fn add(&mut self, o: &Stats) {
        self.programs += o.programs;
        self.discarded += o.discarded;
        for i in 0..4 {
            self.by_flavour[i] += o.by_flavour[i];
        }
        self.division += o.division;
        self.binary32 += o.binary32;
        self.functions += o.functions;
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
    pub(super) fn from_driver_error(e: &DriverError) -> Option<Stop> {
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
