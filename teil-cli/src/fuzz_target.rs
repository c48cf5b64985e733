//! `teil fuzz --target CMD` and `teil fuzz --export DIR`: campaigns against another tensor
//! implementation and test-vector export (spec/fuzzing.md, *Targets* and *Test vectors*).
//!
//! The work is `teil_fuzz::target_campaign` and `teil_fuzz::export`; this module reads the
//! flags, reports every finding on standard error and prints the campaign's one summary line.
//! Exit codes as for every campaign: 0 nothing found, 1 something found, 2 usage or I/O
//! problems (including a target command that cannot be started).

use crate::input::fail;
use std::path::PathBuf;
use std::time::Duration;
use teil_fuzz::case::MAX_FUNCTION_ULPS;
use teil_fuzz::target::TargetCommand;
use teil_fuzz::target_campaign::{self, Config, Finding, Profile, Report};
use teil_interp::rounding::CORRECTLY_ROUNDED;

/// The flags of `teil fuzz` that a campaign against a target or an export reads (`teil fuzz`'s
/// own module, `crate::fuzz`, parses them and hands them over).
pub struct TargetArgs {
    /// `--progress SECONDS` (a progress line where standard error is not a terminal).
    pub progress: Option<f64>,
    pub target: Option<String>,
    pub export: Option<PathBuf>,
    pub replay: Option<PathBuf>,
    pub profile: String,
    pub programs: Option<u64>,
    pub seed: u64,
    pub skip: u64,
    pub target_timeout: f64,
    pub function_ulps: f64,
    /// `--accuracy N`: measure the functions instead of running a campaign.
    pub accuracy: Option<u64>,
    pub time: Option<f64>,
    pub jobs: Option<usize>,
    pub shrink: usize,
    pub out: PathBuf,
    /// `--summary-json FILE`.
    pub summary_json: Option<PathBuf>,
}

pub fn fuzz_target(args: &TargetArgs) -> u8 {
    match run(args) {
        Ok(code) => code,
        Err(msg) => {
            fail(&msg);
            2
        }
    }
}

fn run(args: &TargetArgs) -> Result<u8, String> {
    let profile = Profile::from_name(&args.profile)
        .ok_or_else(|| format!("`--profile {}` is not `all` or `einsum`", args.profile))?;
    if let Some(dir) = &args.export {
        if args.replay.is_some() {
            return Err("`--export` cannot be combined with `--replay`".into());
        }
        let n = args.programs.unwrap_or(1000);
        let done = teil_fuzz::export::export(dir, n, args.seed, args.skip, profile)
            .map_err(|e| e.to_string())?;
        if done.skipped > 0 {
            crate::out::eprint(&format!(
                "{} programs skipped (too large for the oracle, or no einsum-only program)\n",
                done.skipped
            ));
        }
        crate::out::println(&format!(
            "{} cases written to {}",
            done.cases,
            dir.display()
        ));
        return Ok(0);
    }
    let text = args.target.as_deref().unwrap_or_default();
    let command = TargetCommand::parse(text).map_err(|e| e.to_string())?;
    let t = args.target_timeout;
    if !(t.is_finite() && t > 0.0) {
        return Err(format!(
            "`--target-timeout {t}` is not a positive number of seconds"
        ));
    }
    let u = args.function_ulps;
    if !(CORRECTLY_ROUNDED..=MAX_FUNCTION_ULPS).contains(&u) {
        return Err(format!(
            "`--function-ulps {u}` is not a number of ulps from 0.5 to 2^20"
        ));
    }
    let time = match args.time {
        Some(t) if !(t.is_finite() && t >= 0.0) => {
            return Err(format!("`--time {t}` is not a number of seconds"))
        }
        Some(t) => Some(Duration::from_secs_f64(t.min(1e9))),
        None => None,
    };
    let cfg = Config {
        command,
        timeout: Duration::from_secs_f64(t.min(1e9)),
        profile,
        programs: match (args.programs, time) {
            (Some(n), _) => Some(n),
            (None, Some(_)) => None,
            (None, None) => Some(1000),
        },
        seed: args.seed,
        skip: args.skip,
        time,
        jobs: match args.jobs {
            Some(0) => return Err("`--jobs` must be at least 1".into()),
            Some(j) => j,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        },
        shrink: args.shrink,
        out: Some(args.out.clone()),
        cancel: crate::interrupt::cancel_on_signal(),
        function_ulps: u,
    };
    let every = crate::progress::interval(args.progress)?;
    if let Some(n) = args.accuracy {
        return accuracy(&cfg, n, every);
    }
    let report = match &args.replay {
        Some(dir) => target_campaign::replay(&cfg, dir),
        None => {
            let reporter = crate::progress::Reporter::new(cfg.programs, every);
            let report = target_campaign::run(&cfg, &|p| reporter.update(p));
            reporter.finish();
            report
        }
    }
    .map_err(|e| e.to_string())?;
    for f in &report.findings {
        crate::out::eprint(&describe(f, &cfg));
    }
    crate::out::eprint(&format!("{}\n", counters(&report)));
    if let Some(name) = &report.target {
        crate::out::eprint(&format!("target: {name}\n"));
    }
    // A replay counts no constructs: only a campaign's programs are generated.
    if !report.stats.constructs.ops.is_empty() {
        crate::out::eprint(&format!("sent: {}\n", report.stats.constructs));
    }
    crate::out::println(&report.summary());
    if let Some(path) = &args.summary_json {
        let json = teil_fuzz::summary::of_target_campaign(&report, cfg.seed, cfg.skip);
        teil_fuzz::summary::write(path, &json).map_err(|e| e.to_string())?;
    }
    if report.interrupted {
        return Ok(crate::interrupt::EXIT_INTERRUPTED);
    }
    Ok(u8::from(!report.findings.is_empty()))
}

/// `teil fuzz --target CMD --accuracy N`: the table on standard output; 0 once measured (a
/// measurement, not a judgement), 130 when interrupted (with the rows measured so far).
fn accuracy(cfg: &Config, n: u64, every: Option<Duration>) -> Result<u8, String> {
    use teil_fuzz::accuracy::{self, MAX_INPUTS};
    if !(1..=MAX_INPUTS).contains(&n) {
        return Err(format!(
            "`--accuracy {n}` is not a number of inputs from 1 to 2^24"
        ));
    }
    let mut runner =
        target_campaign::Runner::new(cfg.command.clone(), cfg.timeout, cfg.cancel.clone())
            .map_err(|e| e.to_string())?;
    let reporter = crate::progress::Reporter::new(Some(accuracy::programs(n)), every);
    let rows = accuracy::measure(
        &mut runner,
        n,
        cfg.seed,
        &|| cfg.cancel.is_cancelled(),
        &|done| {
            reporter.update(teil_fuzz::campaign::Progress {
                done,
                total: Some(accuracy::programs(n)),
                mismatches: 0,
            })
        },
    );
    reporter.finish();
    if let Some(name) = runner.identity() {
        crate::out::eprint(&format!("target: {name}\n"));
    }
    crate::out::print(&accuracy::table(&rows));
    if cfg.cancel.is_cancelled() {
        return Ok(crate::interrupt::EXIT_INTERRUPTED);
    }
    Ok(0)
}

fn counters(r: &Report) -> String {
    let s = &r.stats;
    let passed = s.programs - s.unsupported - r.findings.len() as u64;
    format!(
        "target: {} passed ({} compared exactly, {} within the bound), {} unsupported, {} skipped, started {} time(s){}",
        passed,
        s.exact,
        passed.saturating_sub(s.exact),
        s.unsupported,
        s.skipped,
        s.starts,
        if s.unjudged > 0 {
            format!(", {} cells not judged", s.unjudged)
        } else {
            String::new()
        }
    )
}

/// The report of one finding, several lines, each ending in a newline.
fn describe(f: &Finding, cfg: &Config) -> String {
    let what = match f.index {
        Some(k) => format!("program {k} (seed {})", f.case.seed),
        None => "the reproducer".to_string(),
    };
    let mut out = format!(
        "mismatch: {what}: {} ({})\n",
        f.kind.describe(),
        f.kind.class()
    );
    for line in f.detail.lines() {
        out.push_str(&format!("    {line}\n"));
    }
    if let Some(s) = &f.shrunk {
        out.push_str(&format!(
            "  shrunk to {} statement(s): {}\n",
            s.case.checked.program().stmts.len(),
            s.detail.lines().next().unwrap_or("")
        ));
        match &s.dir {
            Some(Ok(dir)) => out.push_str(&format!(
                "  reproduce: {}\n",
                target_campaign::replay_command(cfg, dir)
            )),
            Some(Err(e)) => out.push_str(&format!("  the reproducer was not written: {e}\n")),
            None => {}
        }
    }
    if let Some(k) = f.index {
        out.push_str(&format!(
            "  the whole program: teil fuzz --target {} --seed {} --skip {k} --programs 1{}\n",
            target_campaign::shell_quote(&cfg.command.text),
            cfg.seed,
            cfg.profile.flag()
        ));
    }
    out
}
