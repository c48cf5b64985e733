//! `teil fuzz`: the differential fuzzing campaign of spec/fuzzing.md, on the command line.
//!
//! The campaign itself is `teil_fuzz::campaign`; this module only reads the flags, shows a
//! progress bar (when standard error is a terminal), reports every failing program on standard
//! error and prints one summary line on standard output:
//!
//! ```text
//! 1000 programs, 0 mismatches, 123.4 programs/s
//! ```
//!
//! `teil fuzz --replay FILE` runs every check on one reproducer written by an earlier campaign.
//! `--profile-time` adds the campaign's time by phase (`teil_fuzz::profile`) on standard error.
//!
//! Every option is checked before anything runs (`Config::validate`). On SIGINT or SIGTERM the
//! campaign stops (`crate::interrupt`), the summary of the chunks that completed ends in
//! `, interrupted`, and the exit code is 130.
//!
//! Exit codes: 0 no mismatch, 1 some program failed a check, 2 usage or I/O problems
//! (including a C compiler that cannot be run at all, or that times out: E0801), 130
//! interrupted.

use crate::fuzz_target::TargetArgs;
use crate::input::{fail, fail_coded};
use crate::interrupt::{cancel_on_signal, EXIT_INTERRUPTED};
use std::path::PathBuf;
use std::time::Duration;
use teil::CodedError;
use teil_cbackend::plant::Bug;
use teil_cbackend::run::{DriverError, Toolchain};
use teil_fuzz::campaign::{self, Config, Mismatch, Progress, Report, Stop};
use teil_fuzz::isa::Isa;
use teil_fuzz::repro;

#[derive(clap::Args)]
pub struct FuzzArgs {
    /// How many programs (default 1000, or unlimited with `--time`).
    #[arg(long, value_name = "N")]
    pub programs: Option<u64>,
    /// The campaign seed: the same seed gives the same programs.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Start at program K of the campaign (with `--programs 1`: re-run one program).
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub skip: u64,
    /// Padding multiples for the C backend, comma-separated (default 1,3,8); each program is
    /// lowered at the one its seed draws.
    #[arg(long = "pad", value_name = "M,...")]
    pub pads: Option<String>,
    /// Lower every program at every padding multiple of `--pad`, not at the one its seed draws
    /// (about twice the C per program).
    #[arg(long)]
    pub every_pad: bool,
    /// Kernel targets the C is compiled for, 50 programs each in turn: `host` (every kernel
    /// family of the printed C, on this machine's vector instructions where it has them) or
    /// names, comma-separated: default, avx2, avx512, vec128, vec256, vec512, portable
    /// (spec/fuzzing.md, *Kernel targets*).
    #[arg(long, value_name = "ISA,...", default_value = "host")]
    pub isa: String,
    /// Worker threads (default: the number of cores).
    #[arg(long, value_name = "J")]
    pub jobs: Option<usize>,
    /// Stop starting new programs after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub time: Option<f64>,
    /// Programs per C translation unit and driver process.
    #[arg(long, value_name = "C", default_value_t = teil_fuzz::campaign::DEFAULT_CHUNK)]
    pub chunk: usize,
    /// The C compiler to run (looked up on PATH).
    #[arg(long, default_value = "cc")]
    pub cc: String,
    /// Compiler flags replacing the default `-std=c99 -O0` (split on whitespace).
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub cflags: Option<String>,
    /// Stop a compiler run or a driver run after this long: a compiler stops the campaign
    /// (E0801), a driver is a failed check of its kernels.
    #[arg(long, value_name = "SECONDS", default_value_t = crate::run::DEFAULT_CC_TIMEOUT,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub cc_timeout: u64,
    /// Skip the C backend (interpreters, variants and mutants only).
    #[arg(long)]
    pub no_c: bool,
    /// Where reproducers of failing programs are written.
    #[arg(long, value_name = "DIR", default_value = "fuzz-failures")]
    pub out: PathBuf,
    /// Shrink and write reproducers for at most this many failing programs.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub shrink: usize,
    /// Run every check on one reproducer written by an earlier campaign.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// Test only: plant a bug in every generated kernel (spec/fuzzing.md).
    #[arg(long, value_name = "BUG", hide = true)]
    pub plant: Option<String>,
    /// Fuzz another implementation: a `teil-target/1` command, split on whitespace and run
    /// without a shell (spec/fuzzing.md); with `--replay DIR`, replay a target reproducer.
    #[arg(long, value_name = "CMD", allow_hyphen_values = true)]
    pub target: Option<String>,
    /// With `--target`: seconds the target may take for one program before it is restarted.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub target_timeout: f64,
    /// With `--target`: how many ulps of its type a target's function result (`exp`, `log`,
    /// `sqrt`, `tanh`, `erf`) may be from the correctly rounded value, from 0.5 to 2^20
    /// (spec/fuzzing.md, "Judging functions").
    #[arg(long, value_name = "U", default_value_t = teil_fuzz::case::FUNCTION_ULPS)]
    pub function_ulps: f64,
    /// With `--target`: instead of a campaign, measure how far the target's functions are from
    /// the correctly rounded values, on N inputs per function and type (up to 2^24), and print
    /// the table (spec/fuzzing.md, "Accuracy in ulps").
    #[arg(long, value_name = "N", requires = "target", conflicts_with_all = ["replay", "export"])]
    pub accuracy: Option<u64>,
    /// With `--target` or `--export`: `all` constructs, `einsum` steps only, or `compiler`:
    /// what compilers transform, with special values (±0, ±inf, NaN) in half the programs'
    /// inputs (spec/fuzzing.md).
    #[arg(long, value_name = "PROFILE", value_parser = ["all", "einsum", "compiler"], default_value = "all")]
    pub profile: String,
    /// Write the programs, inputs and the oracle's outputs as test vectors into this new
    /// directory instead of running checks (spec/fuzzing.md).
    #[arg(long, value_name = "DIR", conflicts_with = "target")]
    pub export: Option<PathBuf>,
    /// Where standard error is not a terminal (a log, CI), print a progress line at most every
    /// this many seconds (on a terminal a progress bar runs anyway).
    #[arg(long, value_name = "SECONDS")]
    pub progress: Option<f64>,
    /// After the summary, print where the campaign's time went, phase by phase (generation,
    /// oracle, lowering, validation, C compiler, driver, ...), on standard error.
    #[arg(long, conflicts_with_all = ["target", "export"])]
    pub profile_time: bool,
    /// Also write the campaign's figures and findings (with their signatures) as JSON to this
    /// file, atomically (spec/fuzzing.md, *Campaigns on a cluster*).
    #[arg(long, value_name = "FILE", conflicts_with = "export")]
    pub summary_json: Option<PathBuf>,
}

pub fn fuzz(args: &FuzzArgs) -> u8 {
    if args.target.is_some() || args.export.is_some() {
        return crate::fuzz_target::fuzz_target(&TargetArgs {
            progress: args.progress,
            target: args.target.clone(),
            export: args.export.clone(),
            replay: args.replay.clone(),
            profile: args.profile.clone(),
            programs: args.programs,
            seed: args.seed,
            skip: args.skip,
            target_timeout: args.target_timeout,
            function_ulps: args.function_ulps,
            accuracy: args.accuracy,
            time: args.time,
            jobs: args.jobs,
            shrink: args.shrink,
            out: args.out.clone(),
            summary_json: args.summary_json.clone(),
        });
    }
    if args.profile != "all" {
        fail("`--profile` needs `--target` or `--export`");
        return 2;
    }
    let mut cfg = match config(args) {
        Ok(c) => c,
        Err(msg) => {
            fail(&msg);
            return 2;
        }
    };
    let reproducer = match &args.replay {
        Some(file) => match load_replay(args, &mut cfg, file) {
            Ok(r) => Some(r),
            Err(msg) => {
                fail(&msg);
                return 2;
            }
        },
        None => None,
    };
    if let Err(e) = cfg.validate() {
        fail(&e.to_string());
        return 2;
    }
    let every = match crate::progress::interval(args.progress) {
        Ok(every) => every,
        Err(msg) => {
            fail(&msg);
            return 2;
        }
    };
    cfg.toolchain.cancel = cancel_on_signal();
    let start = std::time::Instant::now();
    let explicit_isas = args.isa != "host" || reproducer.is_some();
    let report = match preflight(&mut cfg, explicit_isas) {
        Err(Preflight::Stopped(stop)) => Report {
            stats: Default::default(),
            mismatches: Vec::new(),
            elapsed: start.elapsed(),
            stopped: Some(stop),
        },
        Err(Preflight::Failed(msg)) => {
            fail(&msg);
            return 2;
        }
        Ok(()) => match reproducer {
            Some(r) => campaign::replay(&cfg, r.program, r.inputs, r.seed),
            None => run(&cfg, every),
        },
    };
    for m in &report.mismatches {
        crate::out::eprint(&describe(m, &cfg));
    }
    if let Some(Stop::Environment { code, message }) = &report.stopped {
        fail_coded(*code, message);
    }
    crate::out::println(&report.summary());
    if let Some(path) = &args.summary_json {
        let json = teil_fuzz::summary::of_campaign(&report, cfg.seed, cfg.skip);
        if let Err(e) = teil_fuzz::summary::write(path, &json) {
            fail(&e.to_string());
            return 2;
        }
    }
    if args.profile_time {
        crate::out::eprint(&format!(
            "where the time went ({:.2} s of wall-clock time):\n{}",
            report.elapsed.as_secs_f64(),
            report.stats.profile.table(report.stats.programs)
        ));
    }
    match report.stopped {
        Some(Stop::Interrupted) => EXIT_INTERRUPTED,
        Some(Stop::Environment { .. }) => 2,
        None => u8::from(!report.mismatches.is_empty()),
    }
}

fn config(args: &FuzzArgs) -> Result<Config, String> {
    let mut cfg = Config {
        programs: match (args.programs, args.time) {
            (Some(n), _) => Some(n),
            (None, Some(_)) => None,
            (None, None) => Some(1000),
        },
        seed: args.seed,
        skip: args.skip,
        chunk: args.chunk,
        c_backend: !args.no_c,
        every_pad: args.every_pad,
        shrink: args.shrink,
        out: Some(args.out.clone()),
        ..Config::default()
    };
    if let Some(p) = &args.pads {
        cfg.pads = parse_pads(p)?;
    }
    if let Some(j) = args.jobs {
        cfg.jobs = j;
    }
    if let Some(t) = args.time {
        if !(t.is_finite() && t >= 0.0) {
            return Err(format!("`--time {t}` is not a number of seconds"));
        }
        cfg.time = Some(Duration::from_secs_f64(t.min(1e9)));
    }
    let tc = Toolchain {
        cc: args.cc.clone(),
        timeout: Duration::from_secs(args.cc_timeout),
        ..cfg.toolchain.clone()
    };
    cfg.toolchain = match &args.cflags {
        Some(f) => tc.with_cflags(f),
        None => tc,
    };
    if let Some(name) = &args.plant {
        cfg.plant = Some(parse_plant(name)?);
    }
    cfg.isas = Isa::parse_list(&args.isa)?.unwrap_or_else(|| Isa::host(&cfg.toolchain.cflags));
    Ok(cfg)
}

fn parse_pads(text: &str) -> Result<Vec<u64>, String> {
    let pads: Vec<u64> = text
        .split(',')
        .map(|m| match m.trim().parse::<u64>() {
            Ok(m) if m >= 1 => Ok(m),
            _ => Err(format!(
                "`--pad {text}`: every padding multiple must be a whole number of at least 1"
            )),
        })
        .collect::<Result<_, _>>()?;
    if pads.is_empty() {
        return Err("`--pad` needs at least one padding multiple".into());
    }
    Ok(pads)
}

fn parse_plant(name: &str) -> Result<Bug, String> {
    Bug::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Bug::ALL.iter().map(|b| b.name()).collect();
        format!(
            "`--plant {name}` is not a planted bug; the bugs are {}",
            names.join(", ")
        )
    })
}

/// Why the preflight did not pass.
enum Preflight {
    /// The C backend cannot run (exit 2).
    Failed(String),
    /// Interrupted, or the compiler timed out: reported as a campaign that stopped early.
    Stopped(Stop),
}

/// Compiles and runs one trivial kernel (with the C backend), so that a missing or broken C
/// compiler is one usage error rather than a mismatch for every program; then compiles an
/// empty file with each kernel target's flags. A target whose flags the compiler refuses is
/// a usage error where `--isa` (or the reproducer) named it, and is left out with a note where
/// it came from `--isa host`.
fn preflight(cfg: &mut Config, explicit_isas: bool) -> Result<(), Preflight> {
    if !cfg.c_backend {
        return Ok(());
    }
    let internal = |e: String| Preflight::Failed(format!("internal error: {e}"));
    let (checked, _) = teil::compile("var x : [2]\nx = 2 * x\n")
        .map_err(|_| internal("the preflight program does not check".into()))?;
    let kernel = teil_cbackend::lower(&checked, &teil_cbackend::Options::default())
        .map_err(|e| internal(e.to_string()))?;
    let inputs = teil_interp::random_inputs(&checked, 0);
    teil_cbackend::run::run(&cfg.toolchain, &kernel, &inputs).map_err(cannot_run)?;
    let mut kept = Vec::new();
    for isa in cfg.isas.clone() {
        if isa.flags().is_empty() {
            kept.push(isa);
            continue;
        }
        match teil_cbackend::run::accepts_flags(&cfg.toolchain_for(isa)).map_err(cannot_run)? {
            Ok(()) => kept.push(isa),
            Err(message) => {
                let why = format!(
                    "the C compiler `{}` refuses the flags of kernel target `{isa}` ({}): {}",
                    cfg.toolchain.cc,
                    isa.flags().join(" "),
                    message.lines().next().unwrap_or("").trim()
                );
                if explicit_isas {
                    return Err(Preflight::Failed(format!("`--isa`: {why}")));
                }
                crate::out::eprint(&format!(
                    "note: {why}; the campaign does not compile for it\n"
                ));
            }
        }
    }
    cfg.isas = kept;
    Ok(())
}

/// A failure of the C backend in the preflight: interrupted or timed out, a campaign that
/// stopped early; otherwise the backend cannot run (exit 2).
fn cannot_run(e: DriverError) -> Preflight {
    match e {
        DriverError::Interrupted => Preflight::Stopped(Stop::Interrupted),
        e @ DriverError::TimedOut { .. } => Preflight::Stopped(Stop::Environment {
            code: e.code(),
            message: e.to_string(),
        }),
        e => Preflight::Failed(format!("the C backend cannot run: {e}")),
    }
}

fn run(cfg: &Config, every: Option<Duration>) -> Report {
    let reporter = crate::progress::Reporter::new(cfg.programs, every);
    let report = campaign::run(cfg, &|p: Progress| reporter.update(p));
    reporter.finish();
    report
}

/// Reads the reproducer `file`; its header's padding multiples and planted bug go into `cfg`,
/// unless the flags give others.
fn load_replay(
    args: &FuzzArgs,
    cfg: &mut Config,
    file: &std::path::Path,
) -> Result<repro::Reproducer, String> {
    let r = repro::read(file).map_err(|e| e.to_string())?;
    // The oracle computes the expected values: refuse a reproducer it could not finish.
    if let Ok((checked, _)) = teil::check(r.program.clone()) {
        // Inputs that do not fit the program (a missing, extra or reshaped `.npy`, a value
        // an `f32` input cannot hold) would be discarded as the oracle refuses them, and the
        // replay would read as a fixed bug (`0 programs, 0 mismatches`): refused, naming them.
        let dir = file.with_extension("");
        let damaged = |what: String| {
            format!(
                "the reproducer's inputs in `{}` do not fit its program: {what}",
                dir.display()
            )
        };
        let shapes: Vec<(&str, Vec<u64>)> = r
            .inputs
            .iter()
            .map(|(n, t)| (n.as_str(), t.shape().iter().map(|&d| d as u64).collect()))
            .collect();
        teil::interface::check_inputs(
            &checked,
            shapes.iter().map(|(n, s)| (*n, Some(s.as_slice()))),
        )
        .map_err(|errors| damaged(teil::interface::Coded(&errors).to_string()))?;
        for (name, t) in &r.inputs {
            teil_interp::check_input(&checked, name, t)
                .map_err(|e| damaged(format!("{} (`{name}.npy`)", e.coded())))?;
        }
        let budget = teil_interp::Budget::default();
        budget
            .check_memory(&teil_interp::budget::oracle_bytes(&checked))
            .and_then(|()| {
                budget.check_work("the oracle", teil_interp::budget::oracle_work(&checked))
            })
            .map_err(|e| {
                format!(
                    "{}; the reproducer cannot be checked against the oracle",
                    e.coded()
                )
            })?;
    }
    if args.pads.is_none() && !r.pads.is_empty() {
        cfg.pads = r.pads.clone();
    }
    if args.plant.is_none() {
        cfg.plant = r.plant;
    }
    if let (Some(isa), "host") = (r.isa, args.isa.as_str()) {
        if !isa.runs_here() {
            return Err(format!(
                "the reproducer was compiled for `{isa}` ({}), which this machine does not run; \
                 replay it with another kernel target with `--isa`",
                isa.flags().join(" ")
            ));
        }
        cfg.isas = vec![isa];
    }
    Ok(r)
}

/// The report of one failing program, several lines, each ending in a newline.
fn describe(m: &Mismatch, cfg: &Config) -> String {
    let mut out = String::new();
    let what = match m.index {
        Some(k) => format!("program {k} (seed {})", m.seed),
        None => format!("the reproducer (seed {})", m.seed),
    };
    for (i, f) in m.failures.iter().enumerate() {
        if i == 0 {
            out.push_str(&format!("mismatch: {what}: {}\n", f.check.describe()));
        } else {
            out.push_str(&format!("  and: {}\n", f.check.describe()));
        }
        for line in f.detail.lines() {
            out.push_str(&format!("    {line}\n"));
        }
    }
    if let Some(s) = &m.shrunk {
        let nodes: usize = s
            .program
            .stmts
            .iter()
            .map(|st| {
                let mut n = 0;
                st.value.walk(&mut |_| n += 1);
                n
            })
            .sum();
        out.push_str(&format!(
            "  shrunk to {} statement(s), {nodes} expression node(s): {}\n",
            s.program.stmts.len(),
            s.failure.detail.lines().next().unwrap_or("")
        ));
        match &s.file {
            Some(Ok(path)) => {
                out.push_str(&format!("  reproduce: {}\n", repro::replay_command(path)))
            }
            Some(Err(e)) => out.push_str(&format!("  the reproducer was not written: {e}\n")),
            None => {}
        }
    }
    if let Some(k) = m.index {
        let mut cmd = format!("teil fuzz --seed {} --skip {k} --programs 1", cfg.seed);
        if cfg.pads != campaign::DEFAULT_PADS {
            let pads: Vec<String> = cfg.pads.iter().map(u64::to_string).collect();
            cmd.push_str(&format!(" --pad {}", pads.join(",")));
        }
        if cfg.every_pad {
            cmd.push_str(" --every-pad");
        }
        if cfg.isas != [Isa::Default] {
            cmd.push_str(&format!(" --isa {}", cfg.isa(Some(k))));
        }
        if let Some(b) = cfg.plant {
            cmd.push_str(&format!(" --plant {}", b.name()));
        }
        out.push_str(&format!("  the whole program: {cmd}\n"));
    }
    out
}
