//! `teil fuzz --summary-json FILE`: a campaign's figures and findings as one JSON document
//! (format `teil-fuzz-summary/1`, spec/fuzzing.md *Campaigns on a cluster*), the same for a
//! self-checking campaign ([`crate::campaign`]) and one against a target
//! ([`crate::target_campaign`]). `teil.campaign` reads it from every shard it runs.
//!
//! ```json
//! {"format": "teil-fuzz-summary/1", "seed": 7, "skip": 200, "programs": 100,
//!  "mismatches": 1, "interrupted": false, "stopped": null, "elapsed_s": 3.2, ...,
//!  "findings": [{"index": 213, "check": "wrong value", "signature": "9f0c...",
//!                "skeleton": "v0 = redmax(v1)\n", "statements": 1,
//!                "reproducer": "out/target_1234"}]}
//! ```
//!
//! A finding that was not shrunk (beyond `--shrink N`, or in an interrupted campaign) has a
//! `null` signature, skeleton, statement count and reproducer.

use crate::error::FileError;
use crate::{campaign, signature, target_campaign};
use serde_json::{json, Value};
use std::path::Path;
use teil::ast::Program;

/// The format name in every summary.
pub const FORMAT: &str = "teil-fuzz-summary/1";

/// One failing program of a campaign.
struct Finding<'a> {
    index: Option<u64>,
    /// [`crate::check::Check::family`] or [`target_campaign::Kind::class`].
    check: String,
    describe: String,
    shrunk: Option<(&'a Program, Option<&'a Path>)>,
}

impl Finding<'_> {
    fn to_json(&self) -> Value {
        let (signature, skeleton, statements, reproducer) = match self.shrunk {
            Some((program, path)) => (
                json!(signature::signature(&self.check, program)),
                json!(signature::skeleton(program)),
                json!(program.stmts.len()),
                json!(path.map(|p| p.to_string_lossy())),
            ),
            None => (Value::Null, Value::Null, Value::Null, Value::Null),
        };
        json!({
            "index": self.index,
            "check": self.check,
            "describe": self.describe,
            "signature": signature,
            "skeleton": skeleton,
            "statements": statements,
            "reproducer": reproducer,
        })
    }
}

/// The summary of a self-checking campaign of programs `skip..` with seed `seed`.
pub fn of_campaign(report: &campaign::Report, seed: u64, skip: u64) -> Value {
    let findings: Vec<Value> = report
        .mismatches
        .iter()
        .map(|m| {
            let first = m.shrunk.as_ref().map_or(&m.failures[0], |s| &s.failure);
            Finding {
                index: m.index,
                check: first.check.family(),
                describe: first.check.describe(),
                shrunk: m.shrunk.as_ref().map(|s| {
                    let file = s.file.as_ref().and_then(|f| f.as_ref().ok());
                    (&s.program, file.map(|p| p.as_path()))
                }),
            }
            .to_json()
        })
        .collect();
    let stopped = match &report.stopped {
        None => Value::Null,
        Some(campaign::Stop::Interrupted) => json!("interrupted"),
        Some(campaign::Stop::Environment { message, .. }) => json!(message),
    };
    json!({
        "format": FORMAT,
        "teil": env!("CARGO_PKG_VERSION"),
        "seed": seed,
        "skip": skip,
        "programs": report.stats.programs,
        "mismatches": report.mismatches.len(),
        "discarded": report.stats.discarded,
        "interrupted": matches!(report.stopped, Some(campaign::Stop::Interrupted)),
        "stopped": stopped,
        "elapsed_s": report.elapsed.as_secs_f64(),
        "target": Value::Null,
        "findings": findings,
    })
}

/// The summary of a campaign against a target, of programs `skip..` with seed `seed`.
pub fn of_target_campaign(report: &target_campaign::Report, seed: u64, skip: u64) -> Value {
    let findings: Vec<Value> = report
        .findings
        .iter()
        .map(|f| {
            Finding {
                index: f.index,
                check: f.kind.class().to_string(),
                describe: f.kind.describe().to_string(),
                shrunk: f.shrunk.as_ref().map(|s| {
                    let dir = s.dir.as_ref().and_then(|d| d.as_ref().ok());
                    (s.case.checked.program(), dir.map(|p| p.as_path()))
                }),
            }
            .to_json()
        })
        .collect();
    let s = &report.stats;
    json!({
        "format": FORMAT,
        "teil": env!("CARGO_PKG_VERSION"),
        "seed": seed,
        "skip": skip,
        "programs": s.programs,
        "mismatches": report.findings.len(),
        "unsupported": s.unsupported,
        "skipped": s.skipped,
        "unjudged": s.unjudged,
        "exact": s.exact,
        "starts": s.starts,
        "interrupted": report.interrupted,
        "stopped": if report.interrupted { json!("interrupted") } else { Value::Null },
        "elapsed_s": report.elapsed.as_secs_f64(),
        "target": report.target,
        "sent": s.constructs.to_string(),
        "findings": findings,
    })
}

/// Writes `summary` to `path` atomically (a reader sees the old file or the whole new one).
pub fn write(path: &Path, summary: &Value) -> Result<(), FileError> {
    let text = serde_json::to_string_pretty(summary)? + "\n";
    Ok(teil_io::files::write_atomically(path, text.as_bytes())?)
}
