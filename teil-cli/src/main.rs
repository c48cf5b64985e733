//! The `teil` command.
//!
//! Exit codes, for every subcommand: 0 success (warnings allowed), 1 the input was rejected
//! (a diagnostic with a code was printed), 2 usage or I/O problems.
//!
//! Each subcommand lives in its own module; this file only declares the interface and
//! dispatches.

mod check;
mod input;

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

#[derive(Subcommand)]
enum Command {
    /// Parse and type-check programs; `-` reads standard input.
    Check {
        #[arg(required = true)]
        files: Vec<String>,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
        #[arg(long, value_enum, default_value_t)]
        color: Color,
    },
    /// Print a program in one canonical syntax (parsing the output gives the same program).
    Fmt {
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
    Explain { code: String },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Check {
            files,
            format,
            color,
        } => check::check(&files, format, color),
        Command::Fmt {
            file,
            syntax,
            core,
            color,
        } => check::fmt(&file, syntax, core, color),
        Command::Explain { code } => check::explain(&code),
    };
    ExitCode::from(code)
}
