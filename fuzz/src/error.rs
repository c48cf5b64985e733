//! Every error of the fuzz crate, as data, and the one place that words them.
//!
//! A campaign records what it found as text (a [`crate::campaign::FailedCheck`]'s detail, the
//! comment lines of a reproducer, a target finding's detail): that text is the rendering of
//! these values, made where the record is made.

use std::path::PathBuf;
use teil::ast::ShapeDisplay;
use teil_io::files::WriteError;
use teil_io::npy::NpyError;

/// A value as the reports show it: NaN for `•`, shortest round-trip decimal otherwise.
pub fn show(x: f64) -> String {
    if x.is_nan() {
        "NaN".to_string()
    } else {
        format!("{x}")
    }
}

/// The two sides of a comparison, as reports name them (`oracle`, `C backend at M = 3`).
#[derive(Clone, Debug, PartialEq)]
pub struct Sides(pub String, pub String);

impl From<(&str, &str)> for Box<Sides> {
    fn from((a, b): (&str, &str)) -> Self {
        Box::new(Sides(a.to_string(), b.to_string()))
    }
}

/// How two results differ (`crate::compare`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Difference {
    #[error(
        "`{name}` has shape {} from the {} but {} from the {}",
        ShapeDisplay(want),
        sides.0,
        ShapeDisplay(got),
        sides.1
    )]
    Shape {
        name: String,
        want: Vec<u64>,
        got: Vec<u64>,
        sides: Box<Sides>,
    },
    /// The first differing cell (`at`, 1-based) and how many differ. `bound`: the cell's bound
    /// where the comparison had one per cell (infinite: none).
    #[error(
        "`{name}`[{}]: {} {}, {} {}{}{}",
        list(at),
        sides.0,
        show(*want),
        sides.1,
        show(*got),
        bound_text(*bound),
        more_text(*differing)
    )]
    Cell {
        name: String,
        at: Vec<u64>,
        want: f64,
        got: f64,
        bound: Option<f64>,
        differing: u64,
        sides: Box<Sides>,
    },
    #[error("no value for `{name}` from the {}", sides.1)]
    Missing { name: String, sides: Box<Sides> },
}

fn list(at: &[u64]) -> String {
    at.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
}

fn bound_text(bound: Option<f64>) -> String {
    match bound {
        None => String::new(),
        Some(b) if b.is_finite() => format!(" (the bound is {})", show(b)),
        Some(_) => " (no bound)".to_string(),
    }
}

fn more_text(differing: u64) -> String {
    if differing > 1 {
        format!(" ({differing} cells differ)")
    } else {
        String::new()
    }
}

/// The judgement on a lifted kernel whose outputs differ from the oracle's (spec/fuzzing.md,
/// *Lifted kernels*), when it is not permitted.
#[derive(Debug, thiserror::Error)]
pub enum NotPermitted {
    #[error(
        "not permitted (law: none): the compiled kernel does not compute its loop IR: \
         `{var}`[{}]: the IR in binary64 ({target}) {}, the C backend {}",
        list(index),
        show(*ir),
        show(*kernel)
    )]
    NotTheIr {
        target: teil_cbackend::ir::Target,
        var: String,
        index: Vec<u64>,
        ir: f64,
        kernel: f64,
    },
    #[error(
        "not permitted (law: none): the kernel's term is not the spec's up to the laws of \
         spec/values.md: {0}"
    )]
    Rejected(teil_cbackend::validate::ValidationError),
    #[error(
        "not shown permitted (law: undecided; lifting reassociates, commutes and distributes, \
         but the kernel's terms are unknown): {0}"
    )]
    Undecided(teil_cbackend::validate::ValidationError),
}

/// How one check of a self-checking campaign failed (`crate::campaign`). The first line says
/// what differs; a program text, where there is one, follows on the next lines.
#[derive(Debug, thiserror::Error)]
pub enum CheckFailed {
    #[error(transparent)]
    Differs(Box<Difference>),
    #[error("the C backend panicked: {0}")]
    Panicked(String),
    #[error("{0}")]
    Lowering(teil_cbackend::Error),
    #[error("{0}")]
    Rejected(teil_cbackend::validate::ValidationError),
    #[error("the kernel did not run: {0}")]
    DidNotRun(Box<CheckFailed>),
    #[error("{0}")]
    Run(teil_cbackend::run::DriverError),
    #[error("the driver returned the wrong number of results")]
    WrongCount,
    #[error("the batch returned too few results")]
    TooFewResults,
    #[error("no result")]
    NoResult,
    #[error(
        "non-zero padding in {} after the call",
        names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
    )]
    NonzeroPadding { names: Vec<String> },
    #[error("the oracle cannot compute the fma bound: {0}")]
    FmaBound(teil_interp::RunError),
    #[error("the oracle cannot compute what the cells permit: {0}")]
    Permits(teil_interp::RunError),
    #[error("the kernel wrote its input-only parameter: {0}")]
    WroteInput(Box<Difference>),
    #[error("{difference}\n    judgement: {judgement}")]
    Judged {
        difference: Box<Difference>,
        judgement: Box<NotPermitted>,
    },
    #[error("the fast evaluator failed: {0}")]
    Fast(teil_interp::RunError),
    #[error("the oracle failed on the variant: {0}")]
    OracleOnVariant(teil_interp::RunError),
    #[error("the fast evaluator failed on the variant: {0}")]
    FastOnVariant(teil_interp::RunError),
    #[error("{failed}\nrewritten program:\n{text}")]
    LawVariant {
        failed: Box<CheckFailed>,
        text: String,
    },
    #[error("rewriting by {equation} gives an ill-typed program ({codes})\n{text}")]
    IllTypedRewrite {
        equation: &'static str,
        codes: Codes,
        text: String,
    },
    #[error("the printed program does not parse ({codes})\n{text}")]
    DoesNotParse { codes: Codes, text: String },
    #[error("parsing the printed program gives another program\n{text}")]
    AnotherProgram { text: String },
    #[error("the re-parsed program does not check: {0}")]
    ReparsedDoesNotCheck(Codes),
    #[error("cannot desugar: {code} {message}")]
    Desugar { code: &'static str, message: String },
    #[error("the Core-TeIL form does not check: {0}")]
    CoreDoesNotCheck(Codes),
    #[error("the mutant is accepted\n{text}")]
    MutantAccepted { text: String },
    #[error(
        "expected {expected}, the checker reports {}\n{text}",
        reported.join(", ")
    )]
    MutantCodes {
        expected: &'static str,
        reported: Vec<&'static str>,
        text: String,
    },
}

impl From<Difference> for CheckFailed {
    fn from(d: Difference) -> Self {
        CheckFailed::Differs(Box::new(d))
    }
}

/// The error codes a checker run reported, sorted and without repeats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Codes(pub Vec<&'static str>);

impl std::fmt::Display for Codes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the checker reports {}", self.0.join(", "))
    }
}

/// Why a program cannot be a case of a campaign against another implementation
/// (`crate::case::Case::new`).
#[derive(Debug, thiserror::Error)]
pub enum NotACase {
    #[error("the program does not check")]
    DoesNotCheck,
    #[error("the program reads `{0}` before it is defined")]
    ReadsUndefined(String),
    #[error("no input for `{0}`")]
    NoInput(String),
    #[error("{0}")]
    Oracle(teil_interp::RunError),
}

/// Reading and writing reproducers and case directories (`crate::repro`, `crate::export`,
/// `crate::target_campaign`).
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error("cannot write `{}`: {source}", path.display())]
    WriteIo {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create `{}`: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A file of a case directory that the harness writes for a target.
    #[error("`{}`: {source}", path.display())]
    CaseFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create a directory in `{}`: {source}", path.display())]
    WorkDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`{}` exists; export into a new directory", .0.display())]
    Exists(PathBuf),
    #[error("cannot read `{}`: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read `{}`: {source}", path.display())]
    ReadTensor { path: PathBuf, source: NpyError },
    #[error("`{}` does not parse", .0.display())]
    DoesNotParse(PathBuf),
    #[error("`{}`: cannot read `{field}` in the replay line", path.display())]
    ReplayField { path: PathBuf, field: String },
    #[error("`{}`: {reason}", path.display())]
    NotACase { path: PathBuf, reason: NotACase },
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

/// Why a campaign against another implementation could not run (`crate::target_campaign`).
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("`--target` needs a command")]
    NoCommand,
    #[error(transparent)]
    Start(#[from] Fault),
    #[error(transparent)]
    File(#[from] FileError),
    /// The target exited without answering the first two programs: it does not work at all
    /// (a missing module, a wrong command), so the campaign stops.
    #[error(
        "the target never answered: it exited on the first two programs ({first}; then: \
         {second}), so the campaign stops. Run the command by hand to see why"
    )]
    NeverAnswered { first: String, second: String },
}

/// A target that broke the protocol (a finding; the target is restarted).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Fault {
    /// The command could not be started.
    #[error("the target cannot be started: {0}")]
    Start(String),
    /// The process ended (or closed its standard input) before answering.
    #[error("the target exited without answering: {0}")]
    Exited(String),
    /// The answer is not one JSON object with this case's `id` and a known `status`.
    #[error("the target's answer is not teil-target/1: {0}")]
    Garbage(BadAnswer),
    /// No answer within the timeout.
    #[error("the target did not answer within {} s", .0.as_secs_f64())]
    Timeout(std::time::Duration),
    /// The harness was asked to stop (its `Cancel` flag) while waiting: not a finding.
    #[error("interrupted")]
    Interrupted,
}

/// What is wrong with a target's answer line (a [`Fault::Garbage`]).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BadAnswer {
    #[error("`{shown}` is not JSON ({error})")]
    NotJson { shown: String, error: String },
    #[error("`{shown}` does not answer request {id}")]
    WrongId { shown: String, id: u64 },
    #[error("`{shown}` has no `status` of `ok`, `unsupported` or `error`")]
    NoStatus { shown: String },
    #[error(
        "the answer is longer than {max} bytes (a line of teil-target/1 is one short JSON \
         object)"
    )]
    TooLong { max: usize },
    #[error("the answer is not UTF-8: `{0}`")]
    NotUtf8(String),
}

/// Why the reference evaluator of the ops/1 form (`crate::ops_eval`) cannot run a request: the
/// message of its `error` answer.
#[derive(Debug, thiserror::Error)]
pub enum OpsEvalError {
    #[error("`{0}` is not bound")]
    Unbound(String),
    #[error("step `{out}` has shape {got:?}, its `shape` field says {says:?}")]
    StepShape {
        out: String,
        got: Vec<usize>,
        says: Vec<u64>,
    },
    #[error("argument {} is missing", .0 + 1)]
    MissingArgument(usize),
    #[error("shapes {0:?} and {1:?} do not match")]
    Shapes(Vec<usize>, Vec<usize>),
    #[error("axis {0} is out of range")]
    Axis(usize),
    #[error("axis is out of range")]
    TakeAxis,
    #[error("cannot expand")]
    CannotExpand,
    #[error("index {0} is out of range")]
    Index(u64),
    #[error("`{0}` has no `->`")]
    NoArrow(String),
    #[error("`{equation}` needs {needs} operands, got {got}")]
    Operands {
        equation: String,
        needs: usize,
        got: usize,
    },
    #[error("`{equation}`: an operand has rank {rank}")]
    Rank { equation: String, rank: usize },
    #[error("`{equation}`: label `{label}` has two extents")]
    TwoExtents { equation: String, label: char },
    #[error("`{equation}`: `{label}` is unbound")]
    UnboundLabel { equation: String, label: char },
    #[error("{0}")]
    Ops(teil::ops::OpsError),
    #[error("`{0}` is missing")]
    MissingField(String),
    #[error("a `path` is missing")]
    MissingPath,
    #[error("input `{name}`: {source}")]
    Input { name: String, source: NpyError },
    #[error("output `{0}` was never bound")]
    NeverBound(String),
    #[error(transparent)]
    Write(#[from] WriteError),
}
