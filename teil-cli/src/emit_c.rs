//! `teil emit-c FILE [--pad M] [--name NAME] [-o out.c] [--validate] [--openmp] [--fma] [--ir]
//! [--math DIR] [--target-cpu MACHINE]`: prints
//! the C99 translation unit the padding-aware backend generates for a program (spec/abi.md), on
//! standard output or atomically into a file; `--validate` checks it first
//! (spec/validation.md); `--ir` prints the optimised loop IR as text instead (the kernel the C
//! is printed from and the validator interprets); `--fma` emits fma mode (spec/values.md, "Fused
//! multiply-add"); `--target-cpu` names the machine the kernel's sizes are chosen for
//! (`teil_cbackend::machine`); `--math DIR` also writes the CORE-MATH sources the kernel
//! calls (`teil_cbackend::math`), each file atomically.
//!
//! Exit codes as for every subcommand: 0 success, 1 the program was rejected, 2 usage or I/O
//! problems (including a `--pad` or `--name` the backend cannot use).
//!
//! The C backend as `teil run --backend c` runs a program is [`crate::run::CBackend`].

use crate::einsum::write_output;
use crate::input::{fail, read_source, report};
use crate::{Color, Format};
use teil::CodedError;
use teil_cbackend::Options;

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
    /// Reassociation of sums ([`Options::lift`]).
    pub reassociate: bool,
}

/// With `validate`, the kernel is first checked by translation validation (spec/validation.md):
/// the verdict goes to standard error, and the output is written only when the kernel
/// validated. A kernel shown wrong exits with 1, shapes too large to validate with 2.
pub fn emit_c(
    path: &str,
    pad: u64,
    name: &str,
    target_cpu: Option<&str>,
    (output, math): (Option<&str>, Option<&str>),
    emit: Emit,
    color: Color,
) -> u8 {
    let Emit {
        validate,
        openmp,
        ir,
        fma,
        reassociate,
    } = emit;
    let machine = match teil_cbackend::machine::Machine::target(target_cpu) {
        Ok(m) => m,
        Err(e) => {
            fail(&format!("--target-cpu: {e}"));
            return 2;
        }
    };
    if let Some(hint) = teil_cbackend::machine::hint_for_target(target_cpu) {
        crate::out::eprint(&format!("{hint}\n"));
    }
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
        lift: reassociate,
        sizes: machine.sizes(),
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
    if let Some(dir) = math {
        if let Err(e) = write_math(std::path::Path::new(dir), &kernel) {
            fail(&format!("--math: {e}"));
            return 2;
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

/// Writes the CORE-MATH files `kernel` calls into `dir` (created if missing; an existing
/// `dir` must be a directory, not a link to one), each atomically.
fn write_math(dir: &std::path::Path, kernel: &teil_cbackend::ir::Kernel) -> Result<(), String> {
    let units = teil_cbackend::math::units(&[kernel]);
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(format!("{} is not a directory", dir.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?,
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    }
    for (rel, text) in teil_cbackend::math::files(&units) {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            match std::fs::symlink_metadata(parent) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(format!("{} is not a directory", parent.display())),
                Err(_) => std::fs::create_dir(parent)
                    .map_err(|e| format!("cannot create {}: {e}", parent.display()))?,
            }
        }
        teil_io::files::write_atomically(&path, text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}
