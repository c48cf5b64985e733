//! Case directories and test-vector export (`teil fuzz --export DIR`, spec/fuzzing.md,
//! *Test vectors*).
//!
//! A *case directory* is the one layout shared by exported test vectors and by reproducers of
//! target campaigns: `program.teil` (infix syntax, after comment lines), `program.prefix.teil`,
//! `ops.json` (the document of `teil lower --ops`), `inputs/NAME.npy` and `expected/NAME.npy`
//! (the oracle's value of every output), each `.npy` in its variable's declared element type
//! (float32 for `f32`, float64 otherwise: what `teil run --in` and ONNX's typed inputs take). A
//! reproducer adds `outputs/NAME.npy` (the target's values) and `message.txt`.
//!
//! A directory is built in a staging directory beside the destination and renamed into place
//! (`teil_io::files::StagedDir`), so a directory that exists is complete.

use crate::campaign::Store;
use crate::case::{Case, Generators, Profile};
use crate::error::FileError;
use crate::shrink::Inputs;
use std::path::{Path, PathBuf};
use teil::ast::{ElemType, Program};
use teil::fmt::Style;
use teil_interp::rounding::Permit;
use teil_io::files::{write_new, StagedDir};

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> FileError + '_ {
    move |source| FileError::WriteIo {
        path: path.to_path_buf(),
        source,
    }
}

fn write_tensors(dir: &Path, values: &Store, program: &Program) -> Result<(), FileError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    for (name, t) in values {
        let path = dir.join(format!("{name}.npy"));
        write_new(&path, &npy_bytes(program, name, t))?;
    }
    Ok(())
}

/// The `.npy` bytes of variable `name`'s value `t`, in the element type `program` declares it
/// with (float32 for `f32`: exact, its values are binary32), float64 for a name it does not
/// declare.
pub fn npy_bytes(program: &Program, name: &str, t: &teil_io::npy::Tensor) -> Vec<u8> {
    let elem = program.decl(name).map_or(ElemType::F64, |d| d.elem);
    teil_io::npy::to_bytes_as(t, elem)
}

/// Writes the files of a case directory into `dir` (which must exist): the program after the
/// comment lines of `header`, its ops/1 form, its inputs and the oracle's outputs.
pub fn write_case_files(dir: &Path, case: &Case, header: &[String]) -> Result<(), FileError> {
    let program = case.checked.program();
    let mut text: String = header.iter().map(|l| format!("// {l}\n")).collect();
    text.push_str(&teil::fmt::program(program, Style::Infix));
    let files = [
        ("program.teil", text),
        (
            "program.prefix.teil",
            teil::fmt::program(program, Style::Prefix),
        ),
        ("ops.json", case.ops.to_json()),
    ];
    for (name, text) in files {
        write_new(&dir.join(name), text.as_bytes())?;
    }
    write_tensors(&dir.join("inputs"), &case.inputs, program)?;
    write_tensors(&dir.join("expected"), &case.expected, program)?;
    if let Some(permits) = &case.permits {
        let dir = dir.join("permitted");
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        for (name, p) in permits {
            let t = p.mapv(permit_value);
            write_new(
                &dir.join(format!("{name}.npy")),
                &teil_io::npy::to_bytes(&t),
            )?;
        }
    }
    Ok(())
}

/// Writes `outputs/` (the target's values) into a case directory.
pub fn write_outputs(dir: &Path, outputs: &Store, program: &Program) -> Result<(), FileError> {
    write_tensors(&dir.join("outputs"), outputs, program)
}

/// Fills a fresh staging directory beside `dest` with `fill`, then renames it to `dest`
/// ([`StagedDir`]), replacing an older directory of that name when `replace` (reproducers),
/// refusing otherwise.
pub fn atomically(
    dest: &Path,
    replace: bool,
    fill: impl FnOnce(&Path) -> Result<(), FileError>,
) -> Result<(), FileError> {
    if !replace && dest.exists() {
        return Err(FileError::Exists(dest.to_path_buf()));
    }
    let staged = StagedDir::new(dest)?;
    fill(staged.path())?;
    Ok(staged.commit(replace)?)
}

/// What an export wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct Exported {
    pub cases: u64,
    /// Programs the generator drew but that were not written (the oracle refused them as too
    /// large, or no einsum-only program was found for the seed).
    pub skipped: u64,
}

/// The tolerance name of the index file.
fn tolerance_name(case: &Case) -> &'static str {
    if case.permits.is_some() {
        "permitted"
    } else if case.exact {
        "exact"
    } else {
        "bound"
    }
}

/// The file form of one cell's [`Permit`]: the distance a finite value may be from the
/// expected one; NaN where the value must not be finite; `+∞` where any value is correct.
/// (`Within(∞)`, any finite value, is written as the largest finite float64.)
fn permit_value(p: Permit) -> f64 {
    match p {
        Permit::Within(b) if b.is_finite() => b,
        Permit::Within(_) => f64::MAX,
        Permit::NotFinite => f64::NAN,
        Permit::Any => f64::INFINITY,
    }
}

/// A case's unjudged cells ([`crate::hazard`]): for each output that has any, the 0-based
/// index of each.
fn unjudged(case: &Case) -> serde_json::Value {
    serde_json::Value::Object(
        case.hazards
            .iter()
            .map(|(n, h)| {
                let cells: Vec<serde_json::Value> = h
                    .indexed_iter()
                    .filter(|(_, &x)| x)
                    .map(|(at, _)| serde_json::json!(ndarray::Dimension::slice(&at)))
                    .collect();
                (n.clone(), serde_json::Value::Array(cells))
            })
            .collect(),
    )
}

/// Writes `programs` cases of the campaign with seed `seed` (from program `skip` on) and the
/// index file `index.json` into the new directory `dir`.
pub fn export(
    dir: &Path,
    programs: u64,
    seed: u64,
    skip: u64,
    profile: Profile,
) -> Result<Exported, FileError> {
    let mut exported = Exported {
        cases: 0,
        skipped: 0,
    };
    atomically(dir, false, |tmp| {
        let mut gens = Generators::default();
        let mut entries = Vec::new();
        for k in 0..programs {
            let index = skip.saturating_add(k);
            let Some(case) = gens.case(profile, seed, index, crate::case::FUNCTION_ULPS) else {
                exported.skipped += 1;
                continue;
            };
            let name = format!("case_{index:05}");
            let case_dir = tmp.join(&name);
            std::fs::create_dir_all(&case_dir).map_err(io(&case_dir))?;
            let header = vec![
                format!(
                    "teil test vector: program {index} of `teil fuzz --export DIR --seed {seed}{}`",
                    profile.flag()
                ),
                format!("tolerance: {}", tolerance_name(&case)),
            ];
            write_case_files(&case_dir, &case, &header)?;
            let shapes = |vs: &[(String, Vec<u64>)]| {
                serde_json::Value::Object(
                    vs.iter()
                        .map(|(n, s)| (n.clone(), serde_json::json!(s)))
                        .collect(),
                )
            };
            let mut entry = serde_json::json!({
                "dir": name,
                "index": index,
                "seed": case.seed,
                "tolerance": tolerance_name(&case),
                "inputs": shapes(&case.ops.inputs),
                "outputs": shapes(&case.ops.outputs),
            });
            if !case.hazards.is_empty() {
                entry["unjudged"] = unjudged(&case);
            }
            entries.push(entry);
            exported.cases += 1;
        }
        let index = serde_json::json!({
            "format": "teil-vectors/1",
            "seed": seed,
            "profile": profile.name(),
            "tolerances": {
                "exact": "every cell equal; NaN equals NaN, -0 equals +0",
                "bound": "finite cells within 1e-9 * (1 + max(|x|, |y|)); a cell not finite on one side is not finite on the other",
                "permitted": format!("per cell, as permitted/NAME.npy (float64, the output's shape) says: a finite number d, a finite value within d of the expected one; NaN, a value that is not finite; +inf, any value. Covers every order of the sums, fused or not, and each function result within {} ulps of its type of the correctly rounded one", crate::case::FUNCTION_ULPS),
                "unjudged": "cells listed under a case's \"unjudged\" (0-based indices per output) depend on the sign of a zero or a cancellation residue through a division: any value is correct there",
            },
            "cases": entries,
        });
        let text = serde_json::to_string_pretty(&index)? + "\n";
        Ok(write_new(&tmp.join("index.json"), text.as_bytes())?)
    })?;
    Ok(exported)
}

/// Reads the inputs of a case directory (`inputs/NAME.npy`).
pub fn read_inputs(dir: &Path) -> Result<Inputs, FileError> {
    let data = dir.join("inputs");
    let mut inputs = Inputs::new();
    if !data.is_dir() {
        return Ok(inputs);
    }
    let entries = std::fs::read_dir(&data).map_err(|source| FileError::Read {
        path: data.clone(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    for f in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "npy"))
    {
        let name = f
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let t = teil_io::npy::read(f).map_err(|source| FileError::ReadTensor {
            path: f.clone(),
            source,
        })?;
        inputs.insert(name, t);
    }
    Ok(inputs)
}
