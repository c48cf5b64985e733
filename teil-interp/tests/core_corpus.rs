//! Core-TeIL on the corpus (spec/core.md, "Type safety"): every corpus program the checker
//! accepts has a Core-TeIL form — unless the form would nest deeper than the limit, which is
//! E0005 — and that form uses only Core-TeIL constructs, type-checks with the same shape for
//! every statement, and evaluates to the same store as the program (the oracle, bit for bit).
//! Random programs are checked the same way in `tests/laws.rs`.

use std::path::{Path, PathBuf};
use teil::Code;
use teil_interp::{budget, random_inputs, run_oracle, Tensor};

fn teil_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            teil_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "teil") {
            out.push(p);
        }
    }
}

fn bitwise(a: &Tensor, b: &Tensor) -> bool {
    a.shape() == b.shape()
        && a.iter()
            .zip(b.iter())
            .all(|(x, y)| (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits())
}

/// Oracle runs above this many steps are left to the random programs of `tests/laws.rs`.
const MAX_ORACLE_STEPS: u64 = 2_000_000;

#[test]
fn every_accepted_corpus_program_has_an_equivalent_core_form() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    teil_files(&root.join("tests"), &mut files);
    teil_files(&root.join("examples"), &mut files);
    let (mut accepted, mut evaluated, mut too_deep) = (0, 0, 0);
    for f in &files {
        let src = std::fs::read_to_string(f).expect("readable");
        let Ok((full, _)) = teil::compile(&src) else {
            continue;
        };
        accepted += 1;
        let core = match teil::core::desugar(&full) {
            Ok(core) => core,
            Err(d) => {
                assert_eq!(d.code, Code::TooDeep, "{}: {}", f.display(), d.message);
                too_deep += 1;
                continue;
            }
        };
        assert!(teil::core::is_core(&core), "{}", f.display());
        let (core, _) = teil::check(core).unwrap_or_else(|d| {
            panic!("{}: the Core-TeIL form does not check: {d:?}", f.display())
        });
        for (a, b) in full.program().stmts.iter().zip(&core.program().stmts) {
            assert_eq!(
                full.shape(&a.value),
                core.shape(&b.value),
                "{}",
                f.display()
            );
        }
        if budget::oracle_work(&full) > MAX_ORACLE_STEPS
            || budget::oracle_work(&core) > MAX_ORACLE_STEPS
        {
            continue;
        }
        let inputs = random_inputs(&full, 1);
        let (a, b) = (
            run_oracle(&full, &inputs).expect("oracle"),
            run_oracle(&core, &inputs).expect("oracle on the Core-TeIL form"),
        );
        for (name, v) in &a {
            assert!(bitwise(v, &b[name]), "{}: `{name}` differs", f.display());
        }
        evaluated += 1;
    }
    eprintln!(
        "{} corpus files, {accepted} accepted, {evaluated} evaluated in both forms, {too_deep} refused with E0005",
        files.len()
    );
    assert!(
        accepted >= 50,
        "the corpus is found ({accepted} accepted programs)"
    );
    assert!(
        evaluated * 10 >= accepted * 9,
        "most programs are evaluated: {evaluated}/{accepted}"
    );
}
