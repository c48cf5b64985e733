//! Reproducers: a shrunk failing program as `DIR/repro_<seed>.teil`, its inputs as
//! `DIR/repro_<seed>/<variable>.npy`, and the one command that runs it again
//! (`teil fuzz --replay DIR/repro_<seed>.teil`).
//!
//! The `.teil` file starts with comment lines saying what failed and how; one of them,
//! `// fuzz-replay: seed=S pads=M,... [isa=ISA] [plant=BUG]`, is read back by [`read`]: the
//! seed chooses the program's law variant and mutant as in the campaign, `pads` the padding
//! multiples to run the C backend at, `isa` the kernel target it was compiled for (a C check's;
//! [`crate::isa`]), and `plant` the planted bug that was active (test campaigns only).
//!
//! The files are written all or nothing (`teil_io::files::Staged`), the `.teil` file
//! renamed into place last, so a reproducer that exists is complete.

use crate::check::{Check, FailedCheck};
use crate::error::FileError;
use crate::isa::Isa;
use crate::shrink::Inputs;
use std::path::{Path, PathBuf};
use teil::ast::Program;
use teil::fmt::Style;
use teil_cbackend::plant::Bug;
use teil_io::files::Staged;

/// The marker of the machine-readable header line.
const MARKER: &str = "// fuzz-replay:";

/// A reproducer read back from disk.
#[derive(Clone, Debug)]
pub struct Reproducer {
    pub program: Program,
    pub inputs: Inputs,
    pub seed: u64,
    pub pads: Vec<u64>,
    /// The kernel target of the failed C check (none recorded: the replay's default).
    pub isa: Option<Isa>,
    pub plant: Option<Bug>,
}

/// The command that replays the reproducer at `path`.
pub fn replay_command(path: &Path) -> String {
    let p = path.to_string_lossy();
    let quoted = if p
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:,=".contains(c))
    {
        p.into_owned()
    } else {
        format!("'{}'", p.replace('\'', r"'\''"))
    };
    format!("teil fuzz --replay {quoted}")
}

/// What a reproducer records of the campaign that found it: its seed, its padding multiples
/// and its planted bug (`crate::campaign::Config` converts into one).
#[derive(Clone, Debug)]
pub struct Origin<'a> {
    pub seed: u64,
    pub pads: &'a [u64],
    pub plant: Option<Bug>,
}

/// Writes the reproducer of a failure found on program `index` (if any) with seed `seed` by
/// the campaign `origin`. Returns the `.teil` file's path.
pub fn write<'a>(
    dir: &Path,
    origin: impl Into<Origin<'a>>,
    seed: u64,
    failure: &FailedCheck,
    program: &Program,
    inputs: &Inputs,
    index: Option<u64>,
) -> Result<PathBuf, FileError> {
    let cfg = origin.into();
    let stem = format!("repro_{seed}");
    let file = dir.join(format!("{stem}.teil"));
    let data = dir.join(&stem);
    std::fs::create_dir_all(&data).map_err(|source| FileError::CreateDir {
        path: data.clone(),
        source,
    })?;
    let mut staged = Staged::new();
    for (name, t) in inputs {
        let path = data.join(format!("{name}.npy"));
        staged.add(&path, &crate::export::npy_bytes(program, name, t))?;
    }

    let pads: Vec<u64> = match failure.check {
        Check::C { pad, .. } | Check::Lower { pad } | Check::Validate { pad } => vec![pad],
        _ => cfg.pads.to_vec(),
    };
    let mut text = format!("// teil fuzz reproducer: {}\n", failure.check.describe());
    // The first line says what differs; a judged lifted kernel's line says which law, if any,
    // is behind it (spec/fuzzing.md, *Lifted kernels*).
    let judgement = failure
        .detail
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("judgement:"));
    for line in failure.detail.lines().take(1).chain(judgement) {
        text.push_str(&format!("// {line}\n"));
    }
    if let Some(k) = index {
        text.push_str(&format!(
            "// found as program {k} of `teil fuzz --seed {}`, then shrunk\n",
            cfg.seed
        ));
    }
    text.push_str(&format!("// run again with: {}\n", replay_command(&file)));
    let pads_text: Vec<String> = pads.iter().map(u64::to_string).collect();
    text.push_str(&format!(
        "{MARKER} seed={seed} pads={}",
        pads_text.join(",")
    ));
    if let Check::C { isa, .. } = failure.check {
        text.push_str(&format!(" isa={isa}"));
    }
    if let Some(b) = cfg.plant {
        text.push_str(&format!(" plant={}", b.name()));
    }
    text.push('\n');
    text.push_str(&teil::fmt::program(program, Style::Infix));
    staged.add(&file, text.as_bytes())?;
    staged.commit()?;
    // Inputs of an earlier reproducer with this seed that this one does not have would be
    // read back as inputs: remove them (the reproducer is complete without them).
    if let Ok(entries) = std::fs::read_dir(&data) {
        for e in entries.flatten() {
            let stale = e.path();
            let name = stale.file_stem().map(|s| s.to_string_lossy().into_owned());
            if stale.extension().is_some_and(|x| x == "npy")
                && !name.is_some_and(|n| inputs.contains_key(&n))
            {
                let _ = std::fs::remove_file(&stale);
            }
        }
    }
    Ok(file)
}

/// The UTF-8 text of the regular file at `path`, read as `teil check` reads a program
/// (`teil_io::files::read_regular`): a FIFO, device or directory is refused at once, never
/// waited on or read without end. Every program file the fuzzer replays is read so.
pub fn read_text(path: &Path) -> Result<String, FileError> {
    let fail = |source: std::io::Error| FileError::Read {
        path: path.to_path_buf(),
        source,
    };
    let bytes = teil_io::files::read_regular(path).map_err(|e| {
        fail(match e {
            teil_io::files::ReadError::Io(e) => e,
            other => std::io::Error::other(other.to_string()),
        })
    })?;
    String::from_utf8(bytes).map_err(|e| {
        fail(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            e.utf8_error(),
        ))
    })
}

/// Reads a reproducer written by [`write()`] (or a hand-written program with such a header line;
/// without one, seed 0 and no pads are assumed).
pub fn read(path: &Path) -> Result<Reproducer, FileError> {
    let text = read_text(path)?;
    let parsed = teil::parse(&text);
    if parsed.diagnostics.iter().any(|d| d.is_error()) {
        return Err(FileError::DoesNotParse(path.to_path_buf()));
    }
    let mut seed = 0;
    let mut pads = Vec::new();
    let mut plant = None;
    let mut isa = None;
    if let Some(line) = text.lines().find_map(|l| l.trim().strip_prefix(MARKER)) {
        for field in line.split_whitespace() {
            let bad = || FileError::ReplayField {
                path: path.to_path_buf(),
                field: field.to_string(),
            };
            match field.split_once('=') {
                Some(("seed", v)) => seed = v.parse().map_err(|_| bad())?,
                Some(("pads", v)) => {
                    pads = v
                        .split(',')
                        .map(|m| m.parse::<u64>())
                        .collect::<Result<_, _>>()
                        .map_err(|_| bad())?
                }
                Some(("isa", v)) => {
                    isa = Some(
                        Isa::ALL
                            .into_iter()
                            .find(|i| i.name() == v)
                            .ok_or_else(bad)?,
                    )
                }
                Some(("plant", v)) => plant = Some(Bug::from_name(v).ok_or_else(bad)?),
                _ => return Err(bad()),
            }
        }
    }
    let data = path.with_extension("");
    let mut inputs = Inputs::new();
    if data.is_dir() {
        let entries = std::fs::read_dir(&data).map_err(|source| FileError::Read {
            path: data.clone(),
            source,
        })?;
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for f in files {
            if f.extension().is_some_and(|e| e == "npy") {
                let name = f
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let t = teil_io::npy::read(&f).map_err(|source| FileError::ReadTensor {
                    path: f.clone(),
                    source,
                })?;
                inputs.insert(name, t);
            }
        }
    }
    Ok(Reproducer {
        program: parsed.program,
        inputs,
        seed,
        pads,
        isa,
        plant,
    })
}
