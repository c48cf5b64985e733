//! The `teil` command.
//!
//! Exit codes, for every subcommand: 0 success (warnings allowed), 1 the input was rejected
//! (a diagnostic with a code was printed), 2 usage or I/O problems, 130 interrupted by SIGINT
//! or SIGTERM (`teil fuzz`, `teil run --backend c`: [`interrupt`]). A closed standard output (a
//! reader such as `head` that has gone) is not an error: the rest of the output is dropped and
//! the status is the one the command would have had; other failures to write it are 2 ([`out`]).
//!
//! Each subcommand lives in its own module; this file only declares the interface and
//! dispatches.

mod check;
mod einsum;
mod emit_c;
mod fuzz;
mod fuzz_target;
mod input;
mod interrupt;
mod lower;
mod ops_target;
mod out;
mod progress;
mod run;
mod trace;
mod tune;

use clap::{Parser, Subcommand, ValueEnum};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "teil",
    version,
    about = "TeIL: a type-safe imperative tensor intermediate language",
    long_about = "TeIL checks tensor programs built from collective operations so that a \
                  well-typed program provably never accesses memory out of bounds."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Human-readable reports (ariadne).
    #[default]
    Text,
    /// One JSON object per diagnostic, one per line, on stdout.
    Json,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Color {
    #[default]
    Auto,
    Always,
    Never,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum FmtSyntax {
    /// The TeIL paper's prefix syntax (`alloc`, `add`, `contr`).
    #[default]
    Prefix,
    /// The report's infix operators (`var`, `+`, `#`, `.[ ]`, `^[ ]`) where they exist.
    Infix,
}

/// The evaluators of `teil run --backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RunBackend {
    /// The whole-tensor evaluator.
    Fast,
    /// The reference interpreter.
    Oracle,
    /// The padding-aware C backend (spec/abi.md).
    C,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and type-check programs; `-` reads standard input.
    Check {
        /// The programs: `.teil`, or `.tin` index notation; `-` reads standard input.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<String>,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
        #[arg(long, value_enum, default_value_t)]
        color: Color,
        /// Print each file's parsed AST as one JSON line instead of checking it (the input of
        /// the checker extracted from the Coq proof, proofs/teil_check.ml).
        #[arg(long)]
        ast_json: bool,
    },
    /// Print a program in one canonical syntax (parsing the output gives the same program).
    Fmt {
        /// The program (`.teil`); `-` reads standard input.
        file: String,
        #[arg(long, value_enum, default_value_t)]
        syntax: FmtSyntax,
        /// Print the Core-TeIL form (TeIL paper §4) instead.
        #[arg(long)]
        core: bool,
        #[arg(long, value_enum, default_value_t)]
        color: Color,
    },
    /// Print the long explanation of a diagnostic code (for example `E0305`).
    Explain {
        /// The code, e.g. `E0305` or `W0001` (listed in spec/diagnostics.md).
        code: String,
    },
    /// Lower a NumPy-style einsum equation to a TeIL program (inputs in0, in1, ..., output out).
    Einsum {
        /// The equation, e.g. `ij,jk->ik`.
        #[arg(allow_hyphen_values = true)]
        equation: String,
        /// One shape per operand, as JSON: `[[2,3],[3,4]]`; a scalar operand is `[]`.
        #[arg(long)]
        shapes: String,
        /// Write the program here (atomically) instead of to standard output.
        #[arg(short, long)]
        output: Option<String>,
        #[arg(long, value_enum, default_value_t)]
        syntax: FmtSyntax,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
        #[arg(long, value_enum, default_value_t)]
        color: Color,
    },
    /// Evaluate a program on .npy inputs; print the results or write DIR/NAME.npy per output.
    Run {
        /// The program: `.teil`, or `.tin` index notation; `-` reads standard input.
        file: String,
        /// An input: `NAME=FILE.npy` (float64 or float32, C order); repeat for each input.
        #[arg(long = "in", value_name = "NAME=FILE")]
        inputs: Vec<String>,
        /// Fill the inputs not given with `--in` with reproducible small integers.
        #[arg(long, value_name = "SEED")]
        random_inputs: Option<u64>,
        /// Write `DIR/NAME.npy` for every output (created if needed; written atomically).
        #[arg(long, value_name = "DIR")]
        out: Option<std::path::PathBuf>,
        /// Print the results as nested arrays (the default without `--out`).
        #[arg(long)]
        print: bool,
        /// Hidden alias of `--backend oracle`, kept for scripts written before `--backend`.
        #[arg(long, conflicts_with = "backend", hide = true)]
        oracle: bool,
        /// The evaluator (default `fast`): `oracle` is the reference interpreter (pointwise,
        /// slow); `c` compiles the generated C with `--cc`.
        #[arg(long, value_enum)]
        backend: Option<RunBackend>,
        /// With `--backend c`: round every extent up to a multiple of M.
        #[arg(long, value_name = "M", default_value_t = 1)]
        pad: u64,
        /// With `--backend c`: the C compiler to run (looked up on PATH).
        #[arg(long, default_value = "cc")]
        cc: String,
        /// With `--backend c`: compiler flags replacing the default `-O2` (split on whitespace).
        #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
        cflags: Option<String>,
        /// With `--backend c`: parallel outer loops, compiled with `-fopenmp` (spec/abi.md).
        #[arg(long)]
        openmp: bool,
        /// With `--backend c`: fused multiply-adds in contractions and element-wise
        /// products-then-adds (rounded once; results may differ from the exact default within the
        /// bound of spec/values.md).
        #[arg(long)]
        fma: bool,
        /// With `--backend c`: compute every sum in the spec's order, without contraction
        /// lifting or sums in lanes; the results are then the oracle's bit for bit (without
        /// `--fma`). By default sums may be reassociated, a permitted result of spec/values.md.
        #[arg(long)]
        no_reassociate: bool,
        /// With `--backend c`: the machine the kernels are sized for (spec/padding.md, *Sizes from the machine*):
        /// `host` (this CPU: caches from /sys, vector width from cpuid), `reference` (the
        /// documented default) or a description file such as `teil tune` writes. Default:
        /// `$TEIL_TARGET_CPU`, else `host`. Changes which kernel forms and blockings are
        /// printed, never an exact-mode result (with `--fma`, which pairs fuse may differ,
        /// within the bound of spec/values.md).
        #[arg(long, value_name = "MACHINE")]
        target_cpu: Option<String>,
        #[command(flatten)]
        budget: run::BudgetArgs,
        /// With `--backend c`: stop the compiler or the compiled kernel after this long (E0801).
        #[arg(long, value_name = "SECONDS", default_value_t = run::DEFAULT_CC_TIMEOUT,
              value_parser = clap::value_parser!(u64).range(1..))]
        cc_timeout: u64,
        #[arg(long, value_enum, default_value_t)]
        color: Color,
    },
    /// Show the semantics unfolding at one cell, e.g. `teil trace mm.teil "C[1,2]"`.
    Trace {
        /// The program: `.teil`, or `.tin` index notation; `-` reads standard input.
        file: String,
        /// The cell: `NAME[i, j, ...]` with 1-based indices, or `NAME` for a scalar.
        cell: String,
        /// An input: `NAME=FILE.npy`, to show values; repeat for each input.
        #[arg(long = "in", value_name = "NAME=FILE")]
        inputs: Vec<String>,
        /// Fill the inputs not given with `--in` with reproducible small integers.
        #[arg(long, value_name = "SEED")]
        random_inputs: Option<u64>,
        /// Syntax of the expressions shown (default: the one the program uses).
        #[arg(long, value_enum)]
        syntax: Option<FmtSyntax>,
        #[command(flatten)]
        budget: run::BudgetArgs,
        /// Refuse a trace that would print more than BYTES (suffixes K, M, G, T: binary
        /// multiples; default 16M).
        #[arg(long, value_name = "BYTES", value_parser = run::parse_bytes)]
        max_output: Option<u64>,
        #[arg(long, value_enum, default_value_t)]
        color: Color,
    },
    /// Print the TeIL program an index-notation file (`.tin`) lowers to; `-` reads standard input.
    Lower {
        /// The index-notation file (`.tin`), or a `.teil` file with `--ops`; `-` reads
        /// standard input.
        file: String,
        /// Write the program here (atomically) instead of to standard output.
        #[arg(short, long)]
        output: Option<String>,
        #[arg(long, value_enum, default_value_t)]
        syntax: FmtSyntax,
        /// Print the ops/1 form (JSON, spec/fuzzing.md) of a `.teil` or `.tin` file instead.
        #[arg(long)]
        ops: bool,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
        #[arg(long, value_enum, default_value_t)]
        color: Color,
    },
    /// Print the C99 code of the padding-aware backend for a program (spec/abi.md).
    EmitC {
        /// The program: `.teil`, or `.tin` index notation; `-` reads standard input.
        file: String,
        /// Round every extent up to a multiple of M (1: no padding).
        #[arg(long, value_name = "M", default_value_t = 1)]
        pad: u64,
        /// Name of the generated C function.
        #[arg(long, default_value = "teil_kernel")]
        name: String,
        /// Write the C source here (atomically) instead of to standard output.
        #[arg(short, long)]
        output: Option<String>,
        /// Check the loop IR against the semantics over symbolic values for these shapes
        /// first (spec/validation.md); the C is written only if it validates.
        #[arg(long)]
        validate: bool,
        /// Parallel outer loops (OpenMP pragmas, spec/abi.md); compile with `-fopenmp`.
        #[arg(long)]
        openmp: bool,
        /// Fused multiply-adds in contractions and element-wise products-then-adds: rounded
        /// once where the target has FMA (compile with `-march=native` or `-mfma`); results may
        /// differ from the exact default within the bound of spec/values.md.
        #[arg(long)]
        fma: bool,
        /// Compute every sum in the spec's order, without contraction lifting or sums in lanes
        /// (spec/padding.md): the kernel's results are then the oracle's bit for bit (without
        /// `--fma`). By default sums may be reassociated, a permitted result of spec/values.md.
        #[arg(long)]
        no_reassociate: bool,
        /// Print the optimised loop IR as text instead of the C (the form `--validate` checks).
        #[arg(long)]
        ir: bool,
        /// Also write the CORE-MATH sources the kernel calls (`cr_exp`, ...) into DIR (created
        /// if missing): compile its `cr_*.c` files with the kernel and link with `-lm`
        /// (spec/abi.md, "Functions").
        #[arg(long, value_name = "DIR")]
        math: Option<String>,
        /// The machine the kernels are sized for (spec/padding.md, *Sizes from the machine*):
        /// `host` (this CPU: caches from /sys, vector width from cpuid), `reference` (the
        /// documented default) or a description file such as `teil tune` writes. Default:
        /// `$TEIL_TARGET_CPU`, else `host`. Changes which kernel forms and blockings are
        /// printed, never an exact-mode result (with `--fma`, which pairs fuse may differ,
        /// within the bound of spec/values.md).
        #[arg(long, value_name = "MACHINE")]
        target_cpu: Option<String>,

        #[arg(long, value_enum, default_value_t)]
        color: Color,
    },
    /// Differential fuzzing: random programs through the oracle, the fast evaluator and the C
    /// backend at several padding multiples, with metamorphic variants (spec/fuzzing.md).
    Fuzz(fuzz::FuzzArgs),
    /// Measure on this machine which kernel form is faster where a size decides between two
    /// (the small products' limits), and write the machine's description with the choice
    /// (spec/padding.md, *Sizes from the machine*): `host` kernels of the CLI and the Python
    /// package then use it.
    Tune(tune::TuneArgs),
    /// Test only: a `teil-target/1` target running the ops/1 form with TeIL's reference
    /// evaluator, optionally with a planted bug (spec/fuzzing.md).
    #[command(hide = true)]
    OpsTarget {
        #[arg(long, value_name = "BUG")]
        plant: Option<String>,
        /// Exit after this many answers (a target that crashes midway).
        #[arg(long, value_name = "N")]
        exit_after: Option<u64>,
    },
    /// Run the language server for editors (LSP 3.17 over standard input and output).
    Lsp,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Check {
            files,
            color,
            ast_json: true,
            ..
        } => check::ast_json(&files, color),
        Command::Check {
            files,
            format,
            color,
            ast_json: false,
        } => check::check(&files, format, color),
        Command::Fmt {
            file,
            syntax,
            core,
            color,
        } => check::fmt(&file, syntax, core, color),
        Command::Explain { code } => check::explain(&code),
        Command::Einsum {
            equation,
            shapes,
            output,
            syntax,
            format,
            color,
        } => einsum::einsum(&equation, &shapes, output.as_deref(), syntax, format, color),
        Command::Lower {
            file,
            output,
            syntax,
            ops,
            format,
            color,
        } => lower::lower(&file, output.as_deref(), syntax, ops, format, color),
        Command::EmitC {
            file,
            pad,
            name,
            output,
            validate,
            openmp,
            fma,
            no_reassociate,
            ir,
            math,
            target_cpu,
            color,
        } => emit_c::emit_c(
            &file,
            pad,
            &name,
            target_cpu.as_deref(),
            (output.as_deref(), math.as_deref()),
            emit_c::Emit {
                validate,
                openmp,
                ir,
                fma,
                reassociate: !no_reassociate,
            },
            color,
        ),
        Command::Run {
            file,
            inputs,
            random_inputs,
            out,
            print,
            oracle,
            backend,
            pad,
            cc,
            cflags,
            openmp,
            fma,
            no_reassociate,
            target_cpu,
            budget,
            cc_timeout,
            color,
        } => run::run(&run::RunArgs {
            file,
            inputs,
            random_inputs,
            out,
            print,
            backend: match (oracle, backend) {
                (true, _) | (_, Some(RunBackend::Oracle)) => run::Backend::Oracle,
                (_, Some(RunBackend::C)) => run::Backend::C(
                    run::CBackend::new(pad, cc, cflags.as_deref())
                        .with_openmp(openmp)
                        .with_fma(fma)
                        .with_reassociate(!no_reassociate)
                        .with_target_cpu(target_cpu)
                        .with_timeout(cc_timeout),
                ),
                _ => run::Backend::Fast,
            },
            budget: budget.budget(None),
            color,
        }),
        Command::Trace {
            file,
            cell,
            inputs,
            random_inputs,
            syntax,
            budget,
            max_output,
            color,
        } => trace::trace(&trace::TraceArgs {
            file,
            cell,
            inputs,
            random_inputs,
            syntax,
            budget: budget.budget(max_output),
            color,
        }),
        Command::Fuzz(args) => fuzz::fuzz(&args),
        Command::Tune(args) => tune::tune(&args),
        Command::OpsTarget { plant, exit_after } => {
            ops_target::ops_target(plant.as_deref(), exit_after)
        }
        Command::Lsp => match teil_lsp::run_stdio() {
            Ok(exit) => exit.code(),
            Err(e) => {
                input::fail(&e.to_string());
                2
            }
        },
    };
    ExitCode::from(out::status(code))
}
