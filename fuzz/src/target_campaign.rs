//! Differential campaigns against another tensor implementation (`teil fuzz --target CMD`,
//! spec/fuzzing.md, *Targets*): TeIL's generator draws programs, the oracle computes their
//! outputs, a [`Target`] speaking `teil-target/1` computes them too, and every disagreement is
//! shrunk with [`shrink`] (the same shrinker as the self-checking campaign, with a predicate
//! that asks the target again) into a reproducer directory ([`export`]'s case layout).
//!
//! Programs never read undefined values: a generated program that would (an in-place rewrite
//! reading an output before it is assigned) has the variable supplied instead ([`supply`]), and
//! candidates of the shrinker that read one are not taken. So every value a target sees is a
//! number, and `•` — which no framework has — never has to be modelled.

use crate::campaign::{self, Progress, Store};
use crate::case;
pub use crate::case::{supply, Case, Generators, Profile};
use crate::compare::{self, Tolerance};
use crate::constructs::Constructs;
use crate::error::{FileError, TargetError};
use crate::export;
use crate::shrink::{self, Inputs};
use crate::target::{Answer, Fault, Target, TargetCommand};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use teil::CheckedProgram;
use teil_io::files::{self, StagingDir, WriteError};

/// Shrinking budgets (predicate calls): a fault may cost a whole timeout per call.
const SHRINK_BUDGET: usize = 1000;
const SHRINK_BUDGET_FAULT: usize = 30;

/// What a target campaign runs.
#[derive(Clone, Debug)]
pub struct Config {
    pub command: TargetCommand,
    pub timeout: Duration,
    pub profile: Profile,
    /// How many programs (`None`: until `time` runs out).
    pub programs: Option<u64>,
    pub seed: u64,
    pub skip: u64,
    pub time: Option<Duration>,
    /// Threads preparing cases (generation and oracle) while the target runs.
    pub jobs: usize,
    /// How many findings to shrink (the first ones).
    pub shrink: usize,
    /// Where reproducers are written (`None`: nowhere).
    pub out: Option<PathBuf>,
    /// Stops the campaign between cases and any wait for an answer once set (a signal
    /// handler sets it): the report then says so ([`Report::interrupted`]).
    pub cancel: teil_io::process::Cancel,
    /// The ulps a target's function result may be from the correctly rounded value
    /// ([`crate::case::FUNCTION_ULPS`] by default; spec/fuzzing.md, "Judging functions").
    pub function_ulps: f64,
}

/// How a target failed on a case; shrinking keeps the kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Outputs differ from the oracle's, or are missing or unreadable.
    Wrong,
    /// An output has another shape than the oracle's.
    Shape,
    /// The target answered `error`.
    Error,
    /// The target exited, wrote garbage or timed out.
    Fault,
}

impl Kind {
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Wrong => "the target's outputs differ from the oracle's",
            Kind::Shape => "the target's outputs have the wrong shape",
            Kind::Error => "the target reports an error on a well-typed program",
            Kind::Fault => "the target broke the protocol",
        }
    }

    /// The finding's class, as fuzz/FINDINGS.md and the reproducers name it (spec/fuzzing.md,
    /// "Findings").
    pub fn class(self) -> &'static str {
        match self {
            Kind::Wrong => "wrong value",
            Kind::Shape => "wrong shape",
            Kind::Error => "error on a valid model",
            Kind::Fault => "crash",
        }
    }
}

/// The outcome of one case.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Pass,
    Unsupported(String),
    Found {
        kind: Kind,
        detail: String,
        /// The outputs the target wrote (those that could be read).
        actual: Store,
    },
}

/// A shrunk finding and where its reproducer went.
#[derive(Clone, Debug)]
pub struct Shrunk {
    pub case: Case,
    pub detail: String,
    /// The reproducer directory, or why it was not written.
    pub dir: Option<Result<PathBuf, Arc<FileError>>>,
}

/// A program on which the target failed.
#[derive(Clone, Debug)]
pub struct Finding {
    /// Its index in the campaign (`None` for a replay).
    pub index: Option<u64>,
    pub case: Case,
    pub kind: Kind,
    pub detail: String,
    pub shrunk: Option<Shrunk>,
}

/// Counters of a target campaign.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// Programs sent and judged (unsupported ones included).
    pub programs: u64,
    pub unsupported: u64,
    /// Programs that passed, compared exactly (the others that passed were compared within the
    /// bound).
    pub exact: u64,
    /// Programs not sent: the oracle refused them, or the einsum profile found none.
    pub skipped: u64,
    /// Times the target command was started.
    pub starts: u64,
    /// What the programs judged contained.
    pub constructs: Constructs,
    /// Output cells not judged ([`crate::hazard`]), over the programs judged.
    pub unjudged: u64,
}

#[derive(Clone, Debug)]
pub struct Report {
    pub stats: Stats,
    pub findings: Vec<Finding>,
    pub elapsed: Duration,
    /// The campaign was stopped by [`Config::cancel`]: the figures are of the cases that
    /// completed, and no finding was shrunk.
    pub interrupted: bool,
    /// What the target said it is (its answers' optional `target` field, the last one given).
    pub target: Option<String>,
}

impl Report {
    /// The same line as the self-checking campaign's ([`campaign::summary_line`]).
    pub fn summary(&self) -> String {
        let s = self.elapsed.as_secs_f64();
        let rate = if s > 0.0 {
            self.stats.programs as f64 / s
        } else {
            0.0
        };
        let line = campaign::summary_line(self.stats.programs, self.findings.len(), rate);
        if self.interrupted {
            format!("{line}, interrupted")
        } else {
            line
        }
    }
}

/// A scratch directory for case directories (a staging directory of
/// [`teil_io::files`]: mode 0700, an unpredictable name, locked while the campaign runs, so
/// that a killed campaign's is removed by the next one), removed when dropped.
struct WorkDir(StagingDir);

impl WorkDir {
    fn new() -> Result<WorkDir, FileError> {
        let path = scratch_root();
        StagingDir::new_in(&path)
            .map(WorkDir)
            .map_err(|source| FileError::WorkDir { path, source })
    }

    /// A fresh case directory for case `id`, under a name the target cannot predict: a target
    /// that plants a symbolic link where it expects the next case finds nothing to follow.
    fn case(&self, id: u64) -> std::io::Result<tempfile::TempDir> {
        tempfile::Builder::new()
            .prefix(&format!("case_{id}_"))
            .tempdir_in(self.0.path())
    }
}

/// Where case directories go: `$TMPDIR` when set; otherwise `/dev/shm` where it exists (case
/// files are small and live for one round trip, so memory beats a disk shared with compilers:
/// on the development machine, under load, creating a directory on disk took a millisecond);
/// otherwise the system's temporary directory.
fn scratch_root() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if std::env::var_os("TMPDIR").is_none() && shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// Sends cases to a target, each in a fresh case directory.
pub struct Runner {
    target: Target,
    work: WorkDir,
    next_id: u64,
    /// Answers in the protocol (ok, unsupported or error) so far.
    answers: u64,
    /// The fault of the last case when the target exited without answering it.
    exited: Option<String>,
}

impl Runner {
    /// Starts the target; `Err` when its command cannot be started.
    pub fn new(
        command: TargetCommand,
        timeout: Duration,
        cancel: teil_io::process::Cancel,
    ) -> Result<Runner, TargetError> {
        let mut target = Target::new(command, timeout);
        target.cancel = cancel;
        target.start()?;
        Ok(Runner {
            target,
            work: WorkDir::new()?,
            next_id: 0,
            answers: 0,
            exited: None,
        })
    }

    pub fn starts(&self) -> u64 {
        self.target.starts
    }

    /// What the target said it is, if it did ([`Target::identity`]).
    pub fn identity(&self) -> Option<String> {
        self.target.identity.clone()
    }

    /// Runs one case on the target and judges its answer.
    pub fn check(&mut self, case: &Case) -> Verdict {
        let id = self.next_id;
        self.next_id += 1;
        let dir = match self.work.case(id) {
            Ok(dir) => dir,
            Err(e) => {
                return Verdict::Found {
                    kind: Kind::Fault,
                    detail: format!("the harness could not create a case directory: {e}"),
                    actual: Store::new(),
                }
            }
        };
        self.check_in(id, dir.path(), case)
    }

    /// Runs one case on the target and returns the outputs it wrote, unjudged (`teil fuzz
    /// --accuracy`, [`crate::accuracy`]); `Err` with the verdict when it answered otherwise or
    /// an output cannot be read.
    pub fn evaluate(&mut self, case: &Case) -> Result<Store, Verdict> {
        let id = self.next_id;
        self.next_id += 1;
        let dir = self.work.case(id).map_err(|e| Verdict::Found {
            kind: Kind::Fault,
            detail: format!("the harness could not create a case directory: {e}"),
            actual: Store::new(),
        })?;
        self.ask_in(id, dir.path(), case)?;
        let (actual, problems, kind) = read_outputs(dir.path(), case, |_, _| None::<String>);
        match problems.is_empty() {
            true => Ok(actual),
            false => Err(Verdict::Found {
                kind,
                detail: problems.join("\n"),
                actual,
            }),
        }
    }

    fn check_in(&mut self, id: u64, dir: &Path, case: &Case) -> Verdict {
        match self.ask_in(id, dir, case) {
            Ok(()) => compare_outputs(dir, case),
            Err(verdict) => verdict,
        }
    }

    /// Writes the case into `dir` and asks the target; `Ok` when it answered `ok`.
    fn ask_in(&mut self, id: u64, dir: &Path, case: &Case) -> Result<(), Verdict> {
        let found = |kind, detail: String| Verdict::Found {
            kind,
            detail,
            actual: Store::new(),
        };
        let request = match write_request(id, dir, case) {
            Ok(r) => r,
            // The harness's own I/O failing is not the target's fault; report it as such.
            Err(e) => {
                return Err(found(
                    Kind::Fault,
                    format!("the harness could not write the case: {e}"),
                ))
            }
        };
        let answer = self.target.ask(id, &request);
        self.exited = match &answer {
            Err(f @ Fault::Exited(_)) => Some(f.to_string()),
            _ => None,
        };
        self.answers += u64::from(answer.is_ok());
        match answer {
            Err(fault) => Err(found(Kind::Fault, fault.to_string())),
            Ok(Answer::Unsupported(reason)) => Err(Verdict::Unsupported(reason)),
            Ok(Answer::Error(message)) => Err(found(
                Kind::Error,
                format!("the target reports an error: {message}"),
            )),
            Ok(Answer::Ok) => Ok(()),
        }
    }
}

/// Writes the case directory (`program.teil`, `inputs/`, an empty `outputs/`) and returns the
/// request line.
fn write_request(id: u64, dir: &Path, case: &Case) -> Result<String, FileError> {
    let io = |path: &Path, source| FileError::CaseFile {
        path: path.to_path_buf(),
        source,
    };
    let write_new = |p: &Path, bytes: &[u8]| {
        files::write_new(p, bytes).map_err(|e| match e {
            WriteError::Io { path, source } => io(&path, source),
            e => e.into(),
        })
    };
    let (ins, outs) = (dir.join("inputs"), dir.join("outputs"));
    for d in [&ins, &outs] {
        // Not `create_dir_all`: an entry already there (planted) is an error, not followed.
        std::fs::create_dir(d).map_err(|e| io(d, e))?;
    }
    let program = dir.join("program.teil");
    write_new(
        &program,
        teil::fmt::program(case.checked.program(), teil::fmt::Style::Infix).as_bytes(),
    )?;
    let entry = |path: &Path, shape: &[u64]| {
        format!(
            "{{\"path\": {}, \"shape\": {}}}",
            teil::json::string(&path.to_string_lossy()),
            serde_json::json!(shape)
        )
    };
    let mut inputs = Vec::new();
    for (name, shape) in &case.ops.inputs {
        let path = ins.join(format!("{name}.npy"));
        if let Some(t) = case.inputs.get(name) {
            write_new(&path, &teil_io::npy::to_bytes(t))?;
        }
        inputs.push(format!(
            "{}: {}",
            teil::json::string(name),
            entry(&path, shape)
        ));
    }
    let outputs: Vec<String> = case
        .ops
        .outputs
        .iter()
        .map(|(name, shape)| {
            let path = outs.join(format!("{name}.npy"));
            format!("{}: {}", teil::json::string(name), entry(&path, shape))
        })
        .collect();
    Ok(format!(
        "{{\"id\": {id}, \"dir\": {}, \"program\": {}, \"ops\": {}, \"inputs\": {{{}}}, \"outputs\": {{{}}}}}",
        teil::json::string(&dir.to_string_lossy()),
        teil::json::string(&program.to_string_lossy()),
        teil::ops::steps_json(&case.ops.steps),
        inputs.join(", "),
        outputs.join(", ")
    ))
}

/// Reads the outputs the target wrote and compares them with the oracle's.
fn compare_outputs(dir: &Path, case: &Case) -> Verdict {
    let (actual, problems, kind) =
        read_outputs(dir, case, |name, got| judge_output(case, name, got).err());
    if problems.is_empty() {
        Verdict::Pass
    } else {
        Verdict::Found {
            kind,
            detail: problems.join("\n"),
            actual,
        }
    }
}

/// Reads every output the target wrote, each refused unless it has the oracle's shape, and
/// passes each to `judge`: the outputs read, what was wrong (unreadable outputs and what
/// `judge` said) and the kind of finding that makes.
fn read_outputs<E: std::fmt::Display>(
    dir: &Path,
    case: &Case,
    judge: impl Fn(&str, &teil_interp::Tensor) -> Option<E>,
) -> (Store, Vec<String>, Kind) {
    let mut actual = Store::new();
    let mut problems = Vec::new();
    let mut kind = Kind::Wrong;
    for (name, _) in &case.ops.outputs {
        let path = dir.join("outputs").join(format!("{name}.npy"));
        // The shape the oracle gives the output: a file with another, or whose size is not
        // what its header says, is refused before its data is read.
        let shape: Option<Vec<u64>> = case
            .expected
            .get(name)
            .map(|t| t.shape().iter().map(|&n| n as u64).collect());
        let got = match teil_io::npy::read_as(&path, shape.as_deref()) {
            Ok(t) => t,
            Err(e) => {
                if matches!(e, teil_io::npy::NpyError::Shape { .. }) {
                    kind = Kind::Shape;
                }
                problems.push(format!("the output `{name}` cannot be read: {e}"));
                continue;
            }
        };
        if let Some(e) = judge(name, &got) {
            problems.push(e.to_string());
        }
        actual.insert(name.clone(), got);
    }
    (actual, problems, kind)
}

/// Judges the output `name` a target computed (`got`) against the oracle's (spec/fuzzing.md,
/// "Comparisons" and "Judging functions"): exactly or within the bound as [`Case::exact`]
/// says, or as [`Case::permits`] says for a program with functions or binary32 values, with
/// the hazardous cells not judged. An output the oracle does not give passes.
pub fn judge_output(
    case: &Case,
    name: &str,
    got: &teil_interp::Tensor,
) -> Result<compare::Cells, crate::error::Difference> {
    let Some(want) = case.expected.get(name) else {
        return Ok(compare::Cells::default());
    };
    // A cell a correct target may compute otherwise is not judged: the target's value stands
    // in for the oracle's.
    let want = match case.hazards.get(name) {
        Some(h) if h.shape() == got.shape() => {
            let mut w = want.clone();
            ndarray::Zip::from(&mut w)
                .and(h)
                .and(got)
                .for_each(|w, &h, &g| {
                    if h {
                        *w = g;
                    }
                });
            std::borrow::Cow::Owned(w)
        }
        _ => std::borrow::Cow::Borrowed(want),
    };
    let sides = ("oracle", "target");
    match case.permits.as_ref().and_then(|p| p.get(name)) {
        Some(permits) => compare::tensors_permitted(name, &want, got, permits, sides),
        None if case.exact => compare::tensors(name, &want, got, Tolerance::Exact, sides),
        None => compare::tensors(name, &want, got, Tolerance::Bound, sides),
    }
}

/// Runs a campaign against the target. `Err` when the target cannot be started at all.
pub fn run(cfg: &Config, progress: &dyn Fn(Progress)) -> Result<Report, TargetError> {
    let start = Instant::now();
    let mut runner = Runner::new(cfg.command.clone(), cfg.timeout, cfg.cancel.clone())?;
    let mut stats = Stats::default();
    let mut findings = Vec::new();
    let out_of_time =
        || cfg.time.is_some_and(|t| start.elapsed() >= t) || cfg.cancel.is_cancelled();
    // Generating a program and running the oracle cost more CPU than a NumPy target's
    // answer, so `jobs` threads prepare cases while this one talks to the target. Cases are
    // judged in index order, so the findings (and which are shrunk) do not depend on
    // scheduling.
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    // A target that exits without answering the first two programs does not work at all (a
    // missing module, a wrong command): the campaign stops with one message instead of one
    // finding per program. Faults after an answer, and other faults, are findings.
    let mut early_exits: Vec<String> = Vec::new();
    let (tx, rx) = mpsc::sync_channel::<(u64, Option<Case>)>(64);
    std::thread::scope(|s| {
        for _ in 0..cfg.jobs.max(1) {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            s.spawn(move || {
                let mut gens = Generators::default();
                loop {
                    let k = next.fetch_add(1, Ordering::SeqCst);
                    if stop.load(Ordering::SeqCst)
                        || cfg.programs.is_some_and(|n| k >= n)
                        || out_of_time()
                    {
                        break;
                    }
                    let index = cfg.skip.saturating_add(k);
                    let case = gens.case(cfg.profile, cfg.seed, index, cfg.function_ulps);
                    if tx.send((k, case)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut pending: BTreeMap<u64, Option<Case>> = BTreeMap::new();
        let mut k = 0u64;
        'cases: for (j, case) in rx.iter() {
            pending.insert(j, case);
            while let Some(case) = pending.remove(&k) {
                if out_of_time() {
                    break 'cases;
                }
                let index = cfg.skip.saturating_add(k);
                k += 1;
                let Some(case) = case else {
                    stats.skipped += 1;
                    continue;
                };
                let verdict = runner.check(&case);
                if cfg.cancel.is_cancelled() {
                    // The case was cut short: it counts for nothing.
                    break 'cases;
                }
                if k <= 2 && runner.answers == 0 {
                    if let Some(exit) = runner.exited.take() {
                        early_exits.push(exit);
                        if early_exits.len() == 2 {
                            break 'cases;
                        }
                    }
                }
                stats.programs += 1;
                let special = case::has_special_inputs(cfg.profile, index);
                stats.constructs.add(&case.ops, special);
                stats.unjudged += case.hazards.values().flatten().filter(|&&h| h).count() as u64;
                match verdict {
                    Verdict::Pass => stats.exact += u64::from(case.exact),
                    Verdict::Unsupported(_) => stats.unsupported += 1,
                    Verdict::Found { kind, detail, .. } => findings.push(Finding {
                        index: Some(index),
                        case,
                        kind,
                        detail,
                        shrunk: None,
                    }),
                }
                progress(Progress {
                    done: k,
                    total: cfg.programs,
                    mismatches: findings.len(),
                });
            }
        }
        // Generator threads blocked on a full channel see it closed and stop.
        stop.store(true, Ordering::SeqCst);
        drop(rx);
    });
    if let [first, second] = &early_exits[..] {
        return Err(TargetError::NeverAnswered {
            first: first.clone(),
            second: second.clone(),
        });
    }
    let interrupted = cfg.cancel.is_cancelled();
    for f in findings
        .iter_mut()
        .take(if interrupted { 0 } else { cfg.shrink })
    {
        f.shrunk = Some(shrink_finding(cfg, &mut runner, f));
    }
    stats.starts = runner.starts();
    Ok(Report {
        stats,
        findings,
        elapsed: start.elapsed(),
        interrupted,
        target: runner.identity(),
    })
}

/// Shrinks a finding while the target keeps failing in the same way, and writes the
/// reproducer.
fn shrink_finding(cfg: &Config, runner: &mut Runner, f: &Finding) -> Shrunk {
    let seed = f.case.seed;
    let budget = match f.kind {
        Kind::Fault => SHRINK_BUDGET_FAULT,
        _ => SHRINK_BUDGET,
    };
    // An error keeps its site too: another error of the same class (an empty program that a
    // runtime refuses for another reason) is another finding.
    let site = error_site(&f.detail);
    let fails = |c: &CheckedProgram, inputs: &Inputs| {
        Case::new(
            seed,
            c.program().clone(),
            Some(inputs.clone()),
            cfg.function_ulps,
        )
        .is_ok_and(|case| match runner.check(&case) {
            Verdict::Found { kind, detail, .. } => {
                kind == f.kind && (kind != Kind::Error || error_site(&detail) == site)
            }
            _ => false,
        })
    };
    let (program, inputs) = shrink::shrink(
        f.case.checked.program().clone(),
        f.case.inputs.clone(),
        fails,
        budget,
    );
    let case = Case::new(seed, program, Some(inputs), cfg.function_ulps)
        .unwrap_or_else(|_| f.case.clone());
    let (detail, actual) = match runner.check(&case) {
        Verdict::Found { detail, actual, .. } => (detail, actual),
        // A flaky target: report the shrunk program with the original message.
        _ => (f.detail.clone(), Store::new()),
    };
    let dir = cfg.out.as_ref().map(|out| {
        let dir = out.join(format!("target_{seed}"));
        let target = runner.identity();
        let header = reproducer_header(cfg, f, target.as_deref(), &detail, &dir);
        export::atomically(&dir, true, |tmp| {
            export::write_case_files(tmp, &case, &header)?;
            export::write_outputs(tmp, &actual, case.checked.program())?;
            let replay = replay_command(cfg, &dir);
            let message = format!(
                "{}\nclass: {}\ntarget: {}\n{detail}\nreplay: {replay}\n",
                f.kind.describe(),
                f.kind.class(),
                target.as_deref().unwrap_or(UNNAMED),
            );
            Ok(files::write_new(
                &tmp.join("message.txt"),
                message.as_bytes(),
            )?)
        })
        .map(|()| dir)
        .map_err(Arc::new)
    });
    Shrunk { case, detail, dir }
}

/// Quotes a word for a POSIX shell when it needs it.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:,=".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Where a target's error message says it was raised: its first `FILE.EXT:LINE` word (a
/// C++ assertion's `matmul.h:35`, a Python `file.py:12`), else its first line. Shrinking an
/// error keeps this, so that it does not wander to another error of the same class.
pub fn error_site(detail: &str) -> String {
    let site = detail.split_whitespace().find_map(|w| {
        let (file, line) = w.trim_end_matches([',', ';', ')']).rsplit_once(':')?;
        let named = file.rsplit('/').next()?.contains('.');
        (named && !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()))
            .then(|| format!("{}:{line}", file.rsplit('/').next().unwrap_or(file)))
    });
    site.unwrap_or_else(|| detail.lines().next().unwrap_or_default().to_string())
}

/// The command that replays the reproducer directory `dir` against the campaign's target,
/// with its allowance for functions where it is not the default.
pub fn replay_command(cfg: &Config, dir: &Path) -> String {
    let ulps = if cfg.function_ulps == crate::case::FUNCTION_ULPS {
        String::new()
    } else {
        format!(" --function-ulps {}", cfg.function_ulps)
    };
    format!(
        "teil fuzz --target {}{ulps} --replay {}",
        shell_quote(&cfg.command.text),
        shell_quote(&dir.to_string_lossy())
    )
}

/// How reports name a target that did not say what it is.
const UNNAMED: &str = "(the target did not name itself)";

fn reproducer_header(
    cfg: &Config,
    f: &Finding,
    target: Option<&str>,
    detail: &str,
    dir: &Path,
) -> Vec<String> {
    let mut lines = vec![
        format!("teil fuzz --target reproducer: {}", f.kind.describe()),
        format!(
            "class: {}; target: {}",
            f.kind.class(),
            target.unwrap_or(UNNAMED)
        ),
    ];
    lines.extend(detail.lines().take(1).map(str::to_string));
    if let Some(k) = f.index {
        lines.push(format!(
            "found as program {k} of `teil fuzz --target {} --seed {}{}`, then shrunk",
            shell_quote(&cfg.command.text),
            cfg.seed,
            cfg.profile.flag()
        ));
    }
    lines.push(format!("run again with: {}", replay_command(cfg, dir)));
    lines
}

/// Runs the reproducer directory `dir` (its `program.teil` and `inputs/`) once against the
/// target. `Err` when the directory cannot be read or its program cannot be sent.
pub fn replay(cfg: &Config, dir: &Path) -> Result<Report, TargetError> {
    let start = Instant::now();
    let path = dir.join("program.teil");
    let text = crate::repro::read_text(&path)?;
    let parsed = teil::parse(&text);
    if parsed.diagnostics.iter().any(|d| d.is_error()) {
        return Err(FileError::DoesNotParse(path).into());
    }
    let inputs = export::read_inputs(dir)?;
    let case = Case::new(0, parsed.program, Some(inputs), cfg.function_ulps)
        .map_err(|reason| FileError::NotACase { path, reason })?;
    let mut runner = Runner::new(cfg.command.clone(), cfg.timeout, cfg.cancel.clone())?;
    let mut stats = Stats {
        programs: 1,
        ..Stats::default()
    };
    let mut findings = Vec::new();
    match runner.check(&case) {
        Verdict::Pass => stats.exact += u64::from(case.exact),
        Verdict::Unsupported(_) => stats.unsupported += 1,
        Verdict::Found { kind, detail, .. } => findings.push(Finding {
            index: None,
            case,
            kind,
            detail,
            shrunk: None,
        }),
    }
    stats.starts = runner.starts();
    Ok(Report {
        stats,
        findings,
        elapsed: start.elapsed(),
        interrupted: cfg.cancel.is_cancelled(),
        target: runner.identity(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_errors_site_is_its_first_file_and_line() {
        let fused = "the target reports an error: Fail: [ONNXRuntimeError] : 1 : FAIL : Exception \
                     during initialization: /onnxruntime_src/onnxruntime/core/providers/cpu/math/matmul.h:35 \
                     onnxruntime::MatMul<double>::MatMul(...) std::isfinite(alpha_attr_) was false.";
        let empty = "the target reports an error: Fail: [ONNXRuntimeError] : 1 : FAIL : Exception \
                     during initialization: /onnxruntime_src/onnxruntime/core/framework/session_state_utils.cc:294 \
                     onnxruntime::common::Status ...";
        assert_eq!(error_site(fused), "matmul.h:35");
        assert_eq!(error_site(empty), "session_state_utils.cc:294");
        // No file and line: the first line, so two different messages stay apart.
        assert_eq!(error_site("Divide by zero\nmore"), "Divide by zero");
        assert_ne!(error_site("a: 1 : b"), error_site("c: 1 : d"));
    }
}
