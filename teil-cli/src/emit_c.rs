//! `teil emit-c FILE [--pad M] [--name NAME] [-o out.c] [--validate] [--openmp] [--fma] [--ir]`: prints
//! the C99 translation unit the padding-aware backend generates for a program (spec/abi.md), on
//! standard output or atomically into a file; `--validate` checks it first
//! (spec/validation.md); `--ir` prints the optimised loop IR as text instead (the kernel the C
//! is printed from and the validator interprets); `--fma` emits fma mode (spec/values.md, "Fused
//! multiply-add").
//!
//! Exit codes as for every subcommand: 0 success, 1 the program was rejected, 2 usage or I/O
//! problems (including a `--pad` or `--name` the backend cannot use).
//!
//! [`CBackend`] is the `teil run --backend c` evaluator: compiler missing, compile errors and
//! crashes of the compiled program are usage/environment problems (exit 2) whose message
//! carries the compiler's output and the path of the kept source; a compiler or driver that
//! outlives `--cc-timeout` is E0801 (exit 2); SIGINT or SIGTERM stops it with exit 130
//! ([`crate::interrupt`]).

use crate::einsum::write_output;
use crate::input::{fail, read_source, report};
use crate::run::Failure;
use crate::{Color, Format};
use std::collections::BTreeMap;
use std::time::Duration;
use teil::CheckedProgram;
use teil::CodedError;
use teil_cbackend::run::{RunError, Toolchain};
use teil_cbackend::{Options, ProgramError};
use teil_interp::Tensor;

/// What `teil emit-c` prints and checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Emit {
    /// Translation validation first.
    pub validate: bool,
    /// OpenMP pragmas.
    pub openmp: bool,
    /// The loop IR as text instead of the C.
    pub ir: bool,
    /// Fused multiply-add mode.
    pub fma: bool,
}

/// With `validate`, the kernel is first checked by translation validation (spec/validation.md):
/// the verdict goes to standard error, and the output is written only when the kernel
/// validated. A kernel shown wrong exits with 1, shapes too large to validate with 2.
pub fn emit_c(
    path: &str,
    pad: u64,
    name: &str,
    output: Option<&str>,
    emit: Emit,
    color: Color,
) -> u8 {
    let Emit {
        validate,
        openmp,
        ir,
        fma,
    } = emit;
    let src = match read_source(path) {
        Ok(s) => s,
        Err(e) => return e.report(Format::Text, color),
    };
    let (checked, warnings) = match teil::guard::load(&src.name, &src.text) {
        Ok(ok) => ok,
        Err(diags) => {
            report(&diags, &src, Format::Text, color);
            return 1;
        }
    };
    report(&warnings, &src, Format::Text, color);
    let opts = Options {
        pad,
        name: name.to_string(),
        fma,
        openmp,
        ..Options::default()
    };
    let kernel = match teil_cbackend::lower(&checked, &opts) {
        Ok(k) => k,
        Err(e) => {
            fail(&e.coded());
            return 2;
        }
    };
    if validate {
        match teil_cbackend::validate::validate(&checked, &kernel) {
            Ok(v) => crate::out::eprint(&format!("{v}\n")),
            Err(e) if e.is_rejection() => {
                fail(&format!("the generated kernel does not validate: {e}"));
                return 1;
            }
            Err(e) => {
                fail(&e.to_string());
                return 2;
            }
        }
    }
    let c = if ir {
        kernel.to_string()
    } else {
        teil_cbackend::print::module(&[&kernel])
    };
    match write_output(output, &c) {
        Ok(()) => 0,
        Err(e) => {
            fail(&e);
            2
        }
    }
}

/// The default of `--cc-timeout`, in seconds.
pub const DEFAULT_CC_TIMEOUT: u64 = teil_cbackend::run::DEFAULT_TIMEOUT.as_secs();

/// `teil run --backend c`: lowers the program, compiles it with a generated driver, runs the
/// driver in its own process, and returns every parameter's final value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CBackend {
    pub pad: u64,
    pub toolchain: Toolchain,
    /// Parallel outer loops (`--openmp`); the toolchain then has `-fopenmp`.
    pub openmp: bool,
    /// Fused multiply-add mode (`--fma`, spec/values.md).
    pub fma: bool,
}

impl CBackend {
    /// `cflags`, when given, replaces the default `-O2` (split on whitespace).
    pub fn new(pad: u64, cc: String, cflags: Option<&str>) -> Self {
        let toolchain = Toolchain {
            cc,
            ..Toolchain::default()
        };
        let toolchain = match cflags {
            Some(f) => toolchain.with_cflags(f),
            None => toolchain,
        };
        CBackend {
            pad,
            toolchain,
            openmp: false,
            fma: false,
        }
    }

    /// Bounds each compiler run and each driver run to `seconds` (`--cc-timeout`).
    pub fn with_timeout(mut self, seconds: u64) -> Self {
        self.toolchain.timeout = Duration::from_secs(seconds);
        self
    }

    /// With `on`, kernels get OpenMP pragmas and are compiled with `-fopenmp`.
    pub fn with_openmp(mut self, on: bool) -> Self {
        if on && !self.openmp {
            self.toolchain.cflags.push("-fopenmp".to_string());
        }
        self.openmp |= on;
        self
    }

    /// With `on`, kernels are lowered in fma mode.
    pub fn with_fma(mut self, on: bool) -> Self {
        self.fma = on;
        self
    }

    pub fn run(
        &self,
        p: &CheckedProgram,
        inputs: &BTreeMap<String, Tensor>,
    ) -> Result<BTreeMap<String, Tensor>, Failure> {
        let opts = Options {
            pad: self.pad,
            fma: self.fma,
            openmp: self.openmp,
            ..Options::default()
        };
        let toolchain = Toolchain {
            cancel: crate::interrupt::cancel_on_signal(),
            ..self.toolchain.clone()
        };
        teil_cbackend::run_program(p, &opts, &toolchain, inputs).map_err(|e| match e {
            ProgramError::Lower(teil_cbackend::Error::BadPad(_)) => Failure::Usage(e.to_string()),
            ProgramError::Lower(_) => Failure::Rejected(vec![e.coded()]),
            ProgramError::Run(RunError::Input(_)) => Failure::Rejected(vec![e.coded()]),
            ProgramError::Run(RunError::Interrupted) => Failure::Interrupted,
            ProgramError::Run(e) => match e.code() {
                Some(code) => Failure::Coded(code, e.to_string()),
                None => Failure::Usage(e.to_string()),
            },
            ProgramError::NonzeroPadding(_) => Failure::Usage(e.to_string()),
        })
    }
}
