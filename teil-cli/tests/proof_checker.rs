//! The Rust checker (teil/src/check.rs) against the checker extracted from the Coq proof
//! (proofs/Checker.v, `check_prog`; proofs/README.md): on every program of the corpus and on
//! fuzzer-generated programs, well-typed and ill-typed, both must agree on accept/reject, on
//! each statement's type (its right-hand side's shape and element type), and on the violated
//! rule: the extracted checker's rule and code (the first premise it finds violated, named as
//! in spec/typing.md) must be among the (rule, code) pairs the Rust checker reports for that
//! statement (or for the declarations).
//!
//! Shape errors and element-type errors: the Rust checker runs the shape rules and the
//! element-type rules (E0203, E0311, E0312, E0313) as two independent passes over a statement
//! and reports every error of both, an ill-typed node silencing the rules of its kind above it.
//! The extracted checker stops at the first violated premise: operands first, left to right,
//! then the node's shape premises, then its element-type premise (and, for the statement, E0201,
//! E0202, then E0203 or E0313). So no precedence between the two kinds needs defining here: the
//! premise it reports is violated at a node whose operands satisfy every rule, where the Rust
//! checker's pass of that kind reports it too, and the comparison stays "among the Rust
//! checker's pairs for that statement". Accepting a statement, it must find no error of either
//! kind, and its element type must be the one the Rust checker gives the right-hand side.
//!
//! The pipeline is the one a user can replay: `teil check --ast-json FILES` prints the parsed
//! programs, `proofs/_build/teil-check` (built here by `make -C proofs checker`) answers for
//! each. Nothing is skipped silently: programs with syntax errors (they have no AST) and
//! programs that break an implementation limit (E0005, E0103, E0104, E0309, E0310: not typing
//! premises, so not in the proof) are counted and printed; without coqc/ocamlfind the test
//! fails under `CI=true` and says so loudly otherwise. `TEIL_PROOF_FUZZ=N` sets the number of
//! generated programs (a well-typed one and two ill-typed mutants each: one of
//! `teil_fuzz::mutate`, one breaking a single premise, proof_checker/premises.rs; default 1500).
//!
//! The test is itself tested: `planted_checker_bugs_are_found` builds the extracted checker
//! with known bugs planted (accepting position 0 in `transp`, skipping a premise of T-Mul,
//! T-Diag, T-Contr, ...) and requires the generated programs to expose each one. Numbers above
//! OCaml's 63-bit integers reach the extracted checker exactly (Zarith, proofs/Extract.v).
//!
//! On the accepted programs, the Rust Core-TeIL desugaring (`teil::core::desugar`) is compared
//! with the one proved in Coq (`desugar_prog`, proofs/Core.v) the same way (`teil-check --core`).
//!
//! `proofs/check-assumptions`, the `Print Assumptions` gate, is tested here too: on a copy of
//! the development with an axiom planted, it must fail and name it.

#[path = "proof_checker/premises.rs"]
mod premises;

use std::collections::BTreeMap;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use premises::Premise;
use serde_json::Value;
use teil::ast::ElemType;
use teil::check::check_partial;
use teil::fmt::{self, Style};
use teil_fuzz::campaign::flavour;
use teil_fuzz::gen::{program, sample};
use teil_fuzz::mutate::{ill_typed, Mutation};

/// The codes of the implementation limits, which the typing rules (and the proof) do not have.
const LIMITS: [&str; 5] = ["E0005", "E0103", "E0104", "E0309", "E0310"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn has(tool: &str, args: &[&str]) -> bool {
    Command::new(tool)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// How proofs/Makefile compiles the extracted checker, in the directory of its sources.
const OCAML_BUILD: &str = "ocamlfind ocamlopt -package yojson,zarith -linkpkg \
                           teil_checker.mli teil_checker.ml teil_check.ml -o teil-check";

/// Builds the proofs and the extracted checker once; `None` (said loudly) when the tools are
/// missing outside CI.
fn extracted_checker() -> Option<PathBuf> {
    static CHECKER: OnceLock<Option<PathBuf>> = OnceLock::new();
    CHECKER
        .get_or_init(|| {
            // (what is missing, the command that tells)
            let tools = [
                ("coqc", "coqc --version"),
                ("coq_makefile", "command -v coq_makefile"),
                ("make", "make --version"),
                ("ocamlfind", "ocamlfind list"),
                ("yojson", "ocamlfind query yojson"),
                // libzarith-ocaml, which coq needs, registers zarith without the library
                // ocamlopt links: that is libzarith-ocaml-dev.
                (
                    "zarith",
                    "test -f \"$(ocamlfind query zarith)/zarith.cmxa\"",
                ),
            ];
            let missing: Vec<&str> = (tools.iter())
                .filter(|(_, test)| !has("sh", &["-c", test]))
                .map(|(t, _)| *t)
                .collect();
            if !missing.is_empty() {
                let msg = format!(
                    "the proof's checker cannot be built: {missing:?} missing (Debian packages \
                     coq, ocaml, ocaml-findlib, libyojson-ocaml-dev, libzarith-ocaml-dev; \
                     ./test installs them as root)"
                );
                if std::env::var("CI").as_deref() == Ok("true") {
                    panic!("{msg}");
                }
                eprintln!("warning: NOT RUN: {msg}");
                return None;
            }
            let out = Command::new("make")
                .args(["-s", "-C"])
                .arg(root().join("proofs"))
                .arg("checker")
                .output()
                .expect("make runs");
            assert!(
                out.status.success(),
                "make -C proofs checker failed:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            Some(root().join("proofs/_build/teil-check"))
        })
        .clone()
}

/// A program for both checkers: its name, its text, and, for a mutant of
/// proof_checker/premises.rs, the premise it breaks.
struct Case {
    name: String,
    text: String,
    premise: Option<Premise>,
}

impl Case {
    fn new(name: impl Into<String>, text: impl Into<String>) -> Case {
        Case {
            name: name.into(),
            text: text.into(),
            premise: None,
        }
    }
}

/// One statement as the Rust checker sees it: its span, its right-hand side's shape and
/// element type (a right-hand side of literals alone has the target's, T-Lit).
type StmtView = (Range<usize>, Option<Vec<u64>>, Option<ElemType>);

/// What the Rust checker says about one program: everything the comparison needs, computed
/// once however many extracted checkers are compared with it.
enum RustView {
    /// Syntax errors: no AST to compare.
    Syntax,
    /// An implementation limit, not a typing premise.
    Limit,
    Checked {
        /// Every error: (code, rule, span).
        errors: Vec<(String, String, Range<usize>)>,
        /// Every statement: its span and its right-hand side's shape and element type, if it
        /// has them.
        stmts: Vec<StmtView>,
    },
}

fn rust_view(text: &str) -> RustView {
    let parsed = teil::parse(text);
    if parsed.diagnostics.iter().any(|d| d.is_error()) {
        return RustView::Syntax;
    }
    let partial = check_partial(parsed.program);
    let errors: Vec<(String, String, Range<usize>)> = (partial.diagnostics.iter())
        .filter(|d| d.is_error())
        .map(|d| {
            let rule = d.rule.unwrap_or("none");
            (d.code.as_str().into(), rule.into(), d.primary.span.clone())
        })
        .collect();
    if errors.iter().any(|(c, _, _)| LIMITS.contains(&c.as_str())) {
        return RustView::Limit;
    }
    let stmts = (partial.program.stmts.iter())
        .map(|s| {
            let shape = partial.shape(&s.value).map(<[u64]>::to_vec);
            (s.span.clone(), shape, partial.elem(&s.value))
        })
        .collect();
    RustView::Checked { errors, stmts }
}

/// What the comparison of both checkers found.
#[derive(Default, Debug)]
struct Figures {
    programs: usize,
    compared: usize,
    accepted: usize,
    rejected: usize,
    statements: usize,
    syntax_errors: usize,
    limits: usize,
    /// Agreed rejections, by the extracted checker's rule and code.
    codes: BTreeMap<String, usize>,
    /// Premise mutants compared, by premise, and those the extracted checker reported as
    /// another (rule, code) than the premise's (the Rust checker agreeing or not).
    premises: BTreeMap<Premise, usize>,
    premise_misses: Vec<String>,
    /// Every way the checkers disagree, one message each.
    disagreements: Vec<String>,
}

impl Figures {
    fn summary(&self) -> String {
        format!(
            "{} programs, {} compared ({} accepted, {} rejected, {} statements), {} with \
             syntax errors, {} over a limit; rejections {:?}; premise mutants {:?}; {} \
             disagreements, {} premise mutants reported as another error",
            self.programs,
            self.compared,
            self.accepted,
            self.rejected,
            self.statements,
            self.syntax_errors,
            self.limits,
            self.codes,
            self.premises,
            self.disagreements.len(),
            self.premise_misses.len()
        )
    }

    /// Panics, showing the first few, unless both checkers agreed everywhere.
    fn assert_agreement(&self, what: &str) {
        let n = self.disagreements.len();
        assert!(
            n == 0 && self.premise_misses.is_empty(),
            "{what}: {n} disagreements between the Rust checker and the extracted one, and {} \
             premise mutants reported as another error; the first:\n{}\n{}",
            self.premise_misses.len(),
            self.disagreements[..n.min(3)].join("\n\n"),
            self.premise_misses[..self.premise_misses.len().min(3)].join("\n\n"),
        );
    }
}

/// `teil check --ast-json` on every text: one JSON line each, in order.
fn ast_lines(texts: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for (k, text) in texts.iter().enumerate() {
        let path = dir.path().join(format!("p{k:06}.teil"));
        std::fs::write(&path, text).unwrap();
        paths.push(path);
    }
    let mut lines = Vec::new();
    for chunk in paths.chunks(1000) {
        let out = Command::new(env!("CARGO_BIN_EXE_teil"))
            .args(["check", "--ast-json"])
            .args(chunk)
            .output()
            .unwrap();
        lines.extend(
            String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .map(String::from),
        );
    }
    assert_eq!(lines.len(), texts.len(), "one AST line per program");
    lines
}

/// The extracted checker (with `args`, and `env`) on every line: one JSON answer each, in
/// order.
fn extracted_with(
    checker: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    lines: &[String],
) -> Vec<Value> {
    let mut child = Command::new(checker)
        .args(args)
        .env_remove("TEIL_CHECK_PLANT")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let feed = lines.join("\n") + "\n";
    let writer = std::thread::spawn(move || input.write_all(feed.as_bytes()).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "teil-check failed");
    let answers: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), lines.len(), "one answer per program");
    answers
}

fn extracted(checker: &Path, args: &[&str], lines: &[String]) -> Vec<Value> {
    extracted_with(checker, args, &[], lines)
}

/// Programs ready to be compared: the Rust checker's view and the AST of each.
struct Prepared {
    cases: Vec<Case>,
    views: Vec<RustView>,
    asts: Vec<String>,
}

fn prepare(cases: Vec<Case>) -> Prepared {
    let texts: Vec<&str> = cases.iter().map(|c| c.text.as_str()).collect();
    let asts = ast_lines(&texts);
    let views = texts.iter().map(|t| rust_view(t)).collect();
    Prepared { cases, views, asts }
}

/// Runs both checkers on the prepared programs and returns the figures, disagreements
/// included.
fn compare(what: &str, prepared: &Prepared, checker: &Path) -> Figures {
    let f = judge(prepared, &extracted(checker, &[], &prepared.asts));
    eprintln!("{what}: {}", f.summary());
    f
}

/// The extracted checker's `answers` against the Rust checker's views.
fn judge(prepared: &Prepared, answers: &[Value]) -> Figures {
    let mut f = Figures::default();
    for ((case, view), answer) in prepared.cases.iter().zip(&prepared.views).zip(answers) {
        f.programs += 1;
        let (errors, stmts) = match view {
            RustView::Syntax => {
                f.syntax_errors += 1;
                continue;
            }
            RustView::Limit => {
                f.limits += 1;
                continue;
            }
            RustView::Checked { errors, stmts } => (errors, stmts),
        };
        f.compared += 1;
        let (name, text) = (&case.name, &case.text);
        let ctx = |msg: &str| format!("{name}: {msg}\n{text}\nRust: {errors:?}\nCoq: {answer}");
        if let Err(msg) = agree(errors, stmts, answer, &mut f) {
            f.disagreements.push(ctx(&msg));
            continue;
        }
        if let Some(p) = case.premise {
            *f.premises.entry(p).or_default() += 1;
            let (rule, code) = p.expected();
            let reported: Vec<(&str, &str)> = (answer["stmts"].as_array().into_iter().flatten())
                .filter_map(|r| Some((r.get("rule")?.as_str()?, r.get("err")?.as_str()?)))
                .collect();
            if reported != [(rule, code)] {
                f.premise_misses
                    .push(ctx(&format!("{p:?} is {rule} {code}")));
            }
        }
    }
    f
}

/// Whether one answer of the extracted checker agrees with the Rust checker's view; counts it.
fn agree(
    errors: &[(String, String, Range<usize>)],
    stmts: &[StmtView],
    answer: &Value,
    f: &mut Figures,
) -> Result<(), String> {
    if answer.get("invalid").is_some() {
        return Err("the AST was not read".into());
    }
    let pairs = |keep: &dyn Fn(&Range<usize>, &str) -> bool| -> Vec<(&str, &str)> {
        (errors.iter())
            .filter(|(c, _, sp)| keep(sp, c))
            .map(|(c, r, _)| (c.as_str(), r.as_str()))
            .collect()
    };
    let decl_errors = pairs(&|_, c| matches!(c, "E0101" | "E0102"));
    if let Some(code) = answer.get("decls") {
        let code = code.as_str().unwrap_or_default();
        let rule = answer["rule"].as_str().unwrap_or_default();
        if !decl_errors.contains(&(code, rule)) {
            return Err("declaration error differs".into());
        }
        f.rejected += 1;
        *f.codes.entry(format!("{rule} {code}")).or_default() += 1;
        return Ok(());
    }
    if !decl_errors.is_empty() {
        return Err("only Rust rejects a declaration".into());
    }
    let Some(results) = answer["stmts"].as_array() else {
        return Err("no statements in the answer".into());
    };
    if results.len() != stmts.len() {
        return Err("statement count".into());
    }
    let mut attributed = 0;
    let mut all_ok = true;
    let mut codes = Vec::new();
    for ((span, shape, elem), r) in stmts.iter().zip(results) {
        f.statements += 1;
        let here = pairs(&|sp, _| sp.start >= span.start && sp.end <= span.end);
        attributed += here.len();
        if let Some(t) = r.get("ok") {
            let t: Vec<u64> = serde_json::from_value(t.clone()).map_err(|e| e.to_string())?;
            if !here.is_empty() {
                return Err("only Rust rejects a statement".into());
            }
            if shape.as_ref() != Some(&t) {
                return Err("the statement's type differs".into());
            }
            if elem.map(ElemType::keyword) != r["elem"].as_str() {
                return Err("the statement's element type differs".into());
            }
        } else {
            all_ok = false;
            let code = r["err"].as_str().unwrap_or_default();
            let rule = r["rule"].as_str().unwrap_or_default();
            if !here.contains(&(code, rule)) {
                return Err("the statement's error or rule differs".into());
            }
            codes.push(format!("{rule} {code}"));
        }
    }
    if attributed != errors.len() {
        return Err("an error outside every statement".into());
    }
    if all_ok != errors.is_empty() {
        return Err("accept/reject differs".into());
    }
    for c in codes {
        *f.codes.entry(c).or_default() += 1;
    }
    if all_ok {
        f.accepted += 1;
    } else {
        f.rejected += 1;
    }
    Ok(())
}

/// The Rust desugaring (`teil::core::desugar`, behind `teil fmt --core`) against the one proved
/// in Coq (`desugar_prog`, proofs/Core.v, extracted): on every accepted program they must give
/// the same Core-TeIL program, parentheses aside. Returns how many were compared and how many
/// the Rust desugaring refused as too deep (E0005, a limit the proof does not have).
fn compare_core(what: &str, programs: &[Case], checker: &Path) -> (usize, usize) {
    let mut originals = Vec::new();
    let mut desugared = Vec::new();
    let mut names = Vec::new();
    let mut too_deep = 0;
    for Case { name, text, .. } in programs {
        let Ok((checked, _)) = teil::compile(text) else {
            continue;
        };
        match teil::core::desugar(&checked) {
            Ok(p) => {
                originals.push(text.as_str());
                desugared.push(fmt::program(&p, Style::Prefix));
                names.push(name);
            }
            Err(d) => {
                assert_eq!(d.code.as_str(), "E0005", "{what}: {name}: {}", d.message);
                too_deep += 1;
            }
        }
    }
    let coq = extracted(checker, &["--core"], &ast_lines(&originals));
    let rust_texts: Vec<&str> = desugared.iter().map(String::as_str).collect();
    let rust = ast_lines(&rust_texts);
    for (((name, c), r), text) in names.iter().zip(&coq).zip(&rust).zip(&rust_texts) {
        let r: Value = serde_json::from_str(r).unwrap();
        assert_eq!(
            strip_parens(c.clone()),
            strip_parens(r),
            "{what}: {name}: the Core-TeIL forms differ; Rust's:\n{text}"
        );
    }
    eprintln!(
        "{what}: Core-TeIL forms compared: {}, refused as too deep (E0005): {too_deep}",
        names.len()
    );
    (names.len(), too_deep)
}

/// A JSON AST without its `paren` nodes.
fn strip_parens(v: Value) -> Value {
    match v {
        Value::Object(mut m) => {
            if m.get("kind").and_then(Value::as_str) == Some("paren") {
                return strip_parens(m.remove("e").unwrap());
            }
            Value::Object(m.into_iter().map(|(k, v)| (k, strip_parens(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(strip_parens).collect()),
        v => v,
    }
}

/// Every `.teil` file under `dir`, recursively, in path order.
fn teil_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            teil_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "teil") {
            out.push(p);
        }
    }
}

/// The corpus: tests/, examples/ (the papers' figures are in tests/papers) and every ```teil
/// block of spec/.
fn corpus() -> Vec<Case> {
    let root = root();
    let mut files = Vec::new();
    teil_files(&root.join("tests"), &mut files);
    teil_files(&root.join("examples"), &mut files);
    let mut programs: Vec<Case> = (files.iter())
        .map(|p| {
            let name = p.strip_prefix(&root).unwrap().display().to_string();
            Case::new(name, std::fs::read_to_string(p).unwrap())
        })
        .collect();
    let mut specs: Vec<PathBuf> = (std::fs::read_dir(root.join("spec")).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    specs.sort();
    for spec in specs {
        let text = std::fs::read_to_string(&spec).unwrap();
        let mut block: Option<String> = None;
        for (n, line) in text.lines().enumerate() {
            match &mut block {
                None if line.starts_with("```teil") => block = Some(String::new()),
                Some(b) if line.starts_with("```") => {
                    let name = format!("{}:{}", spec.file_name().unwrap().to_string_lossy(), n);
                    programs.push(Case::new(name, std::mem::take(b)));
                    block = None;
                }
                Some(b) => {
                    b.push_str(line);
                    b.push('\n');
                }
                None => {}
            }
        }
    }
    programs
}

#[test]
fn the_extracted_checker_agrees_with_the_rust_checker_on_the_corpus() {
    let Some(checker) = extracted_checker() else {
        return;
    };
    let programs = prepare(corpus());
    let f = compare("corpus", &programs, &checker);
    f.assert_agreement("corpus");
    // The corpus has hundreds of programs, accepted and rejected: a broken walk or reader
    // would show here.
    assert!(f.compared >= 200, "{}", f.summary());
    assert!(f.accepted >= 100 && f.rejected >= 50, "{}", f.summary());
    let (core, too_deep) = compare_core("corpus", &programs.cases, &checker);
    assert_eq!(
        core + too_deep,
        f.accepted,
        "every accepted program desugared"
    );
}

/// Extents and positions above 2^62 (OCaml's `int` ends at 2^62 - 1; the AST's numbers are
/// u64): the extracted checker reads them exactly, so it tells 2^62 from 2^62 + 1 and gives
/// types with such extents, as the Rust checker does.
#[test]
fn the_extracted_checker_reads_numbers_above_2_62_exactly() {
    let Some(checker) = extracted_checker() else {
        return;
    };
    const DECLS: &str = "alloc A : [4611686018427387904]\nalloc B : [4611686018427387905]\n\
                         alloc C : [9223372036854775807]\nalloc s : []\n";
    let ok = |t: &str| format!(r#"{{"ok":[{t}],"elem":"f64"}}"#);
    let err = |rule: &str, code: &str| format!(r#"{{"err":"{code}","rule":"{rule}"}}"#);
    // (statement, the extracted checker's answer for it)
    let cases = [
        ("A = B", err("OK-Stmt", "E0202")),
        ("A = A + B", err("T-Add", "E0302")),
        ("B = B", ok("4611686018427387905")),
        (
            "C = expa 1 9223372036854775807 s",
            ok("9223372036854775807"),
        ),
        ("s = proj 1 9223372036854775807 C", ok("")),
        ("s = proj 1 9223372036854775808 C", err("T-Proj", "E0306")),
        ("s = proj 1 4611686018427387905 A", err("T-Proj", "E0306")),
        ("s = proj 18446744073709551615 1 A", err("T-Proj", "E0303")),
        ("s = red+ 18446744073709551615 C", err("T-Red", "E0303")),
        (
            "C = transp 1 18446744073709551615 C",
            err("T-Transp", "E0303"),
        ),
        ("C = expa 18446744073709551615 1 C", err("T-Expa", "E0307")),
    ];
    let mut programs: Vec<Case> = (cases.iter())
        .map(|(stmt, _)| Case::new(*stmt, format!("{DECLS}{stmt}\n")))
        .collect();
    let mut expected: Vec<Value> = (cases.iter())
        .map(|(_, a)| serde_json::from_str(&format!(r#"{{"stmts":[{a}]}}"#)).unwrap())
        .collect();
    programs.push(Case::new(
        "redeclared",
        "alloc A : [4611686018427387904]\nalloc A : [4611686018427387905]\n",
    ));
    expected.push(serde_json::json!({"decls": "E0101", "rule": "S-Var"}));
    let prepared = prepare(programs);
    let answers = extracted(&checker, &[], &prepared.asts);
    for ((case, answer), want) in prepared.cases.iter().zip(&answers).zip(&expected) {
        assert_eq!(answer, want, "{}", case.text);
    }
    let f = judge(&prepared, &answers);
    f.assert_agreement("numbers above 2^62");
    assert_eq!(f.compared, prepared.cases.len(), "{}", f.summary());
}

/// Element types, case by case: literals settled by an operand, a conversion or the target
/// (T-Lit's range checked only in `f32`, at binary32's edge too), mixed operands, conversions
/// to the same type, assignments of another element type, and statements breaking a shape
/// premise and an element-type one at once (the extracted checker reports the first it meets;
/// the Rust checker both). Each answer of the extracted checker is fixed here, and the Rust
/// checker must agree with it as everywhere else.
#[test]
fn the_extracted_checker_settles_literals_as_the_rust_checker_does() {
    let Some(checker) = extracted_checker() else {
        return;
    };
    const DECLS: &str = "alloc A : f32[3]\nalloc B : [3]\nalloc s : f32[]\nalloc d : []\n";
    let ok = |t: &str, elem: &str| format!(r#"{{"ok":[{t}],"elem":"{elem}"}}"#);
    let err = |rule: &str, code: &str| format!(r#"{{"err":"{code}","rule":"{rule}"}}"#);
    // (statement, the extracted checker's answer for it)
    let cases = [
        // Settled by the target.
        ("s = 1e39 + 1", err("T-Lit", "E0313")),
        ("d = 1e39 + 1", ok("", "f64")),
        ("d = -1e39 * 1e39", ok("", "f64")),
        ("s = 3 * 4", ok("", "f32")),
        ("d = red+ 1 (expa 1 3 2.5)", ok("", "f64")),
        ("s = 3.4028235e38", ok("", "f32")),
        ("s = 3.4028236e38", err("T-Lit", "E0313")),
        ("s = 3.40282357e38", err("T-Lit", "E0313")),
        // Settled by a conversion: to the other type than the conversion's.
        ("d = f64 (1e39 * 2)", err("T-Lit", "E0313")),
        ("d = f64 (2 + 1e39)", err("T-Lit", "E0313")),
        ("s = f32 1e39", ok("", "f32")),
        // Settled by the other operand, through functions and shape operations.
        ("A = max A (expa 1 3 1e39)", err("T-Lit", "E0313")),
        (
            "A = min (expa 1 3 1e39) (expa 1 3 1)",
            err("T-Lit", "E0313"),
        ),
        ("A = exp (abs (expa 1 3 1e39))", err("T-Lit", "E0313")),
        ("B = exp (abs (expa 1 3 1e39))", ok("3", "f64")),
        ("d = red+ 1 (red+ 1 (expa 1 3 1e39 # f64 A))", ok("", "f64")),
        ("s = f32 (f64 s) + 1e-50", ok("", "f32")),
        // Mixed operands: an operation of unknown element type settles nothing.
        (
            "s = red+ 1 ((A + B) + expa 1 3 1e39)",
            err("T-Add", "E0311"),
        ),
        ("A = 1e39 * (A + B)", err("T-Add", "E0311")),
        ("d = red+ 1 (red+ 1 (A # B))", err("T-Prod", "E0311")),
        ("A = max A B", err("T-Func2", "E0311")),
        // Conversions and assignments.
        ("B = f64 (f32 B)", ok("3", "f64")),
        ("B = f64 (f64 (f32 B))", err("T-Conv", "E0312")),
        ("s = f64 2", err("OK-Stmt", "E0203")),
        ("B = A", err("OK-Stmt", "E0203")),
        // A shape premise and an element-type premise broken: the operands' first, then the
        // node's shape premise.
        ("A = A + (1e39 - 1e39)", err("T-Add", "E0302")),
        ("A = f32 (B + 1e39) * 1e39", err("T-Add", "E0302")),
        ("s = red+ 1 (A # B)", err("T-Prod", "E0311")),
        ("s = A", err("OK-Stmt", "E0202")),
        ("A = max (A + B) d", err("T-Add", "E0311")),
    ];
    let programs: Vec<Case> = (cases.iter())
        .map(|(stmt, _)| Case::new(*stmt, format!("{DECLS}{stmt}\n")))
        .collect();
    let expected: Vec<Value> = (cases.iter())
        .map(|(_, a)| serde_json::from_str(&format!(r#"{{"stmts":[{a}]}}"#)).unwrap())
        .collect();
    let prepared = prepare(programs);
    let answers = extracted(&checker, &[], &prepared.asts);
    for ((case, answer), want) in prepared.cases.iter().zip(&answers).zip(&expected) {
        assert_eq!(answer, want, "{}", case.text);
    }
    let f = judge(&prepared, &answers);
    f.assert_agreement("element types");
    assert_eq!(f.compared, prepared.cases.len(), "{}", f.summary());
}

/// `TEIL_PROOF_FUZZ`, or 1500.
fn fuzz_count() -> u64 {
    std::env::var("TEIL_PROOF_FUZZ").map_or(1500, |v| v.parse().unwrap())
}

/// The generated programs: for each seed, a well-typed program, its mutant of
/// `teil_fuzz::mutate` and a premise mutant (proof_checker/premises.rs), each when the program
/// offers a place for it; prepared once for the tests that use them.
fn generated() -> &'static Prepared {
    static GENERATED: OnceLock<Prepared> = OnceLock::new();
    GENERATED.get_or_init(|| {
        let mut cases = Vec::new();
        // Premise mutants made so far, by premise.
        let mut broken = [0; Premise::ALL.len()];
        for seed in 0..fuzz_count() {
            let p = sample(&program(flavour(seed)), seed);
            let style = if seed % 2 == 0 {
                Style::Prefix
            } else {
                Style::Infix
            };
            let text = fmt::program(&p, style);
            let checked = teil::check(p)
                .expect("the generator makes well-typed programs")
                .0;
            cases.push(Case::new(format!("seed {seed}"), text));
            let m = Mutation::ALL[seed as usize % Mutation::ALL.len()];
            if let Some(bad) = ill_typed(&checked, m, (seed / 12) as usize) {
                cases.push(Case::new(
                    format!("seed {seed}, {m:?}"),
                    fmt::program(&bad, Style::Prefix),
                ));
            }
            // Of the premises this program offers a place to break, the one broken least
            // so far (division, for one, is in one flavour in four and rare there), the next
            // in turn among equals.
            let offered = (0..Premise::ALL.len())
                .filter(|&k| premises::mutant(&checked, Premise::ALL[k], 0).is_some());
            let turn = |k: usize| {
                (k + Premise::ALL.len() - seed as usize % Premise::ALL.len()) % Premise::ALL.len()
            };
            if let Some(k) = offered.min_by_key(|&k| (broken[k], turn(k))) {
                let premise = Premise::ALL[k];
                broken[k] += 1;
                let bad = premises::mutant(&checked, premise, seed as usize).unwrap();
                cases.push(Case {
                    name: format!("seed {seed}, {premise:?}"),
                    text: fmt::program(&bad, style),
                    premise: Some(premise),
                });
            }
        }
        prepare(cases)
    })
}

#[test]
fn the_extracted_checker_agrees_with_the_rust_checker_on_generated_programs() {
    let Some(checker) = extracted_checker() else {
        return;
    };
    let n = fuzz_count();
    let programs = generated();
    let f = compare("generated", programs, &checker);
    f.assert_agreement("generated");
    assert_eq!(f.syntax_errors, 0, "{}", f.summary());
    let (core, too_deep) = compare_core("generated", &programs.cases, &checker);
    assert_eq!(
        (core, too_deep),
        (f.accepted, 0),
        "every accepted program desugared"
    );
    assert!(f.accepted as u64 >= n * 9 / 10, "{}", f.summary());
    assert!(f.rejected as u64 >= n, "{}", f.summary());
    // Every premise was broken, compared and reported as itself, many times (1500 seeds give
    // each of the 31 premises 46 or 47 mutants).
    if n >= 1500 {
        for p in Premise::ALL {
            let k = f.premises.get(&p).copied().unwrap_or(0);
            assert!(
                k >= 20,
                "only {k} mutants of {p:?} compared: {}",
                f.summary()
            );
        }
    }
}

/// A bug planted in a copy of the extracted checker: in `infer`'s arm for `arm` (or, when `arm`
/// starts with `let `, in the whole function it defines: `join`, `conv_elem`, `lit_fits`,
/// `check_stmt`, the element-type premises), `old` (found once, any run of white space
/// matching any other) becomes `new`, which is the bug when `planted "NAME"` holds: one build
/// carries every bug and TEIL_CHECK_PLANT chooses.
struct Plant {
    name: &'static str,
    arm: &'static str,
    old: &'static str,
    new: &'static str,
}

/// Position 0 accepted somewhere, each position-taking rule's premises skipped, the scalar of
/// T-SMul and T-SDiv accepted on the wrong side, T-Mul's shape premise skipped; each
/// element-type premise skipped (mixed operands, a conversion to the same type, an assignment
/// of another element type, a literal beyond binary32's range).
const PLANTS: [Plant; 16] = [
    Plant {
        name: "red_position_0",
        arm: "ERed",
        old: "if pos_ok i t",
        new: r#"if pos_ok i t || planted "red_position_0" && Big_int_Z.sign_big_int i = 0"#,
    },
    Plant {
        name: "transp_position_0",
        arm: "ETransp",
        old: "if (&&) (pos_ok i t) (pos_ok j t)",
        new: r#"if (pos_ok i t || planted "transp_position_0" && Big_int_Z.sign_big_int i = 0)
             && (pos_ok j t || planted "transp_position_0" && Big_int_Z.sign_big_int j = 0)"#,
    },
    Plant {
        name: "diag_skips_E0303",
        arm: "EDiag",
        old: "if (&&) (pos_ok i t) (pos_ok j t)",
        new: r#"if planted "diag_skips_E0303" || (pos_ok i t && pos_ok j t)"#,
    },
    Plant {
        name: "diag_skips_E0304",
        arm: "EDiag",
        old: "then if Nat.eqb i j",
        new: r#"then if not (planted "diag_skips_E0304") && Nat.eqb i j"#,
    },
    Plant {
        name: "contr_skips_E0303",
        arm: "EContr",
        old: "if (&&) (pos_ok i t) (pos_ok j t)",
        new: r#"if planted "contr_skips_E0303" || (pos_ok i t && pos_ok j t)"#,
    },
    Plant {
        name: "contr_skips_E0305",
        arm: "EContr",
        old: "else if Nat.eqb",
        new: r#"else if planted "contr_skips_E0305" || Nat.eqb"#,
    },
    Plant {
        name: "expa_position_0",
        arm: "EExpa",
        old: "(Big_int_Z.le_big_int (Big_int_Z.succ_big_int Big_int_Z.zero_big_int) i)",
        new: r#"(planted "expa_position_0"
              || Big_int_Z.le_big_int (Big_int_Z.succ_big_int Big_int_Z.zero_big_int) i)"#,
    },
    Plant {
        name: "proj_position_0",
        arm: "EProj",
        old: "if pos_ok i t",
        new: r#"if pos_ok i t || planted "proj_position_0" && Big_int_Z.sign_big_int i = 0"#,
    },
    Plant {
        name: "proj_slice_0",
        arm: "EProj",
        old: "(Big_int_Z.le_big_int (Big_int_Z.succ_big_int Big_int_Z.zero_big_int) m)",
        new: r#"(planted "proj_slice_0"
              || Big_int_Z.le_big_int (Big_int_Z.succ_big_int Big_int_Z.zero_big_int) m)"#,
    },
    Plant {
        name: "mul_skips_E0302",
        arm: "EBin",
        old: r#"Err ("T-Mul", E0302)"#,
        new: r#"(if planted "mul_skips_E0302" then Ok (t0, k0) else Err ("T-Mul", E0302))"#,
    },
    Plant {
        name: "mul_scalar_on_the_right",
        arm: "EBin",
        old: "if is_scalar t0",
        new: r#"if is_scalar t0 || planted "mul_scalar_on_the_right" && is_scalar t1"#,
    },
    Plant {
        name: "div_scalar_on_the_left",
        arm: "EBin",
        old: "if is_scalar t1",
        new: r#"if is_scalar t1 || planted "div_scalar_on_the_left" && is_scalar t0"#,
    },
    Plant {
        name: "mixed_elem_accepted",
        arm: "let join ",
        old: "if etype_eqb a b",
        new: r#"if etype_eqb a b || planted "mixed_elem_accepted""#,
    },
    Plant {
        name: "conv_same_accepted",
        arm: "let conv_elem ",
        old: "if etype_eqb b _UU03c4_",
        new: r#"if etype_eqb b _UU03c4_ && not (planted "conv_same_accepted")"#,
    },
    Plant {
        name: "assign_elem_skipped",
        arm: "let check_stmt ",
        old: "if etype_eqb a0 _UU03c4_",
        new: r#"if etype_eqb a0 _UU03c4_ || planted "assign_elem_skipped""#,
    },
    Plant {
        name: "f32_range_skipped",
        arm: "let lit_fits ",
        old: "| F32 -> f32_finite",
        new: r#"| F32 -> f32_finite || planted "f32_range_skipped""#,
    },
];

/// Where `needle` occurs in `hay`, a white-space character of `needle` matching any run of
/// white space (the extraction breaks its lines at spaces, where its printer likes).
fn find_loosely(hay: &str, needle: &str) -> Vec<Range<usize>> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let mut found = Vec::new();
    for start in 0..h.len() {
        let (mut i, mut j) = (start, 0);
        while j < n.len() && i < h.len() {
            if n[j].is_ascii_whitespace() {
                if !h[i].is_ascii_whitespace() {
                    break;
                }
                while i < h.len() && h[i].is_ascii_whitespace() {
                    i += 1;
                }
                while j < n.len() && n[j].is_ascii_whitespace() {
                    j += 1;
                }
            } else if h[i] == n[j] {
                i += 1;
                j += 1;
            } else {
                break;
            }
        }
        if j == n.len() {
            found.push(start..i);
        }
    }
    found
}

/// The extracted checker, built in `dir` from proofs/_build's sources with every plant of
/// [`PLANTS`] in it.
fn planted_checker(dir: &Path) -> PathBuf {
    let build = root().join("proofs/_build");
    for f in ["teil_checker.mli", "teil_check.ml"] {
        std::fs::copy(build.join(f), dir.join(f)).unwrap();
    }
    let mut src = std::fs::read_to_string(build.join("teil_checker.ml")).unwrap();
    let infer = src
        .find("let rec infer g")
        .expect("infer in the extracted checker");
    for plant in &PLANTS {
        assert!(plant.new.contains(&format!("planted \"{}\"", plant.name)));
        let (start, end) = if plant.arm.starts_with("let ") {
            // A function: from `let NAME ` at the start of a line to the next blank line.
            let start = (src.find(&format!("\n{}", plant.arm)))
                .unwrap_or_else(|| panic!("no {} in the extracted checker", plant.arm));
            let end = start + 1 + src[start + 1..].find("\n\n").unwrap();
            (start, end)
        } else {
            // The arm: from `| ARM (` at the start of a line to the next arm or blank line.
            let start = infer
                + (src[infer..].find(&format!("\n| {} (", plant.arm)))
                    .unwrap_or_else(|| panic!("no arm {} in infer", plant.arm));
            let end = start
                + 1
                + [src[start + 1..].find("\n| "), src[start + 1..].find("\n\n")]
                    .into_iter()
                    .flatten()
                    .min()
                    .unwrap();
            (start, end)
        };
        let at = find_loosely(&src[start..end], plant.old);
        assert_eq!(
            at.len(),
            1,
            "plant {}: `{}` is not once in the arm {}:\n{}",
            plant.name,
            plant.old,
            plant.arm,
            &src[start..end]
        );
        let at = start + at[0].start..start + at[0].end;
        src.replace_range(at, plant.new);
    }
    let src = format!(
        "(* Bugs planted by teil-cli/tests/proof_checker.rs. *)\n\
         let plant = Sys.getenv_opt \"TEIL_CHECK_PLANT\"\n\
         let planted name = plant = Some name\n{src}"
    );
    std::fs::write(dir.join("teil_checker.ml"), src).unwrap();
    let out = Command::new("sh")
        .args(["-c", OCAML_BUILD])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the planted checker does not build:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("teil-check")
}

/// The differential test finds each bug of [`PLANTS`]: on the generated programs, the
/// extracted checker with that bug disagrees with the Rust checker, while the same build with
/// no bug chosen agrees everywhere.
#[test]
fn planted_checker_bugs_are_found() {
    if extracted_checker().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let checker = planted_checker(dir.path());
    let programs = generated();
    let run = |plant: Option<&str>| {
        let env: Vec<(&str, &str)> = plant.map(|p| ("TEIL_CHECK_PLANT", p)).into_iter().collect();
        judge(
            programs,
            &extracted_with(&checker, &[], &env, &programs.asts),
        )
    };
    run(None).assert_agreement("the planted build, no bug chosen");
    let mut unnoticed = Vec::new();
    for plant in &PLANTS {
        let f = run(Some(plant.name));
        eprintln!(
            "planted {}: {} disagreements",
            plant.name,
            f.disagreements.len()
        );
        if f.disagreements.is_empty() {
            unnoticed.push(plant.name);
        }
    }
    assert!(
        unnoticed.is_empty(),
        "bugs planted in the extracted checker that no generated program exposes: {unnoticed:?}"
    );
}

/// proofs/check-assumptions on a copy of the development (sources, compiled files, the script)
/// in a temporary directory, with `assumptions` as Assumptions.v, `allow` as the allow-list
/// and `extra` appended to Lists.v (a source only: it is not compiled). Returns the exit
/// status and the standard error.
fn check_assumptions(assumptions: &str, allow: &str, extra: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let proofs = root().join("proofs");
    for entry in std::fs::read_dir(&proofs).unwrap() {
        let path = entry.unwrap().path();
        let keep = path.extension().is_some_and(|e| e == "v" || e == "vo")
            || path.file_name().is_some_and(|n| n == "check-assumptions");
        if keep {
            std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
        }
    }
    std::fs::write(dir.path().join("Assumptions.v"), assumptions).unwrap();
    std::fs::write(dir.path().join("assumptions.allow"), allow).unwrap();
    let mut lists = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join("Lists.v"))
        .unwrap();
    lists.write_all(extra.as_bytes()).unwrap();
    let out = Command::new(dir.path().join("check-assumptions"))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The assumptions gate names every axiom it does not allow, whatever the allow-list holds:
/// one declared after a comment on the same line (the source scan), one declared as a
/// top-level `Variable` (no keyword to scan for; `Print Assumptions` shows it) beside an
/// allowed one; words in comments and strings are not declarations.
#[test]
fn check_assumptions_names_every_axiom_not_allowed() {
    if extracted_checker().is_none() {
        return;
    }
    // A small Assumptions.v, so that each run takes a second: one real theorem, and one that
    // rests on an axiom the allow-list names.
    let allowed = "From TeIL Require Import Lists Syntax Checker.\n\
                   Print Assumptions infer_sound.\n\
                   Variable allowed_axiom : True.\n\
                   Lemma uses_allowed : True. Proof. exact allowed_axiom. Qed.\n\
                   Print Assumptions uses_allowed.\n";
    let allow = "# the test's\nallowed_axiom\n";
    let harmless = "(* An Axiom in a comment, (* nested *) and Admitted *)\n\
                    Definition not_code := \"Axiom \"\" Admitted (*\"%string.\n";
    let (ok, err) = check_assumptions(allowed, allow, harmless);
    assert!(
        ok,
        "the allowed axiom or the harmless words were refused:\n{err}"
    );

    let planted = format!(
        "{allowed}Variable cheat : forall P : Prop, P.\n\
         Lemma planted : False. Proof. exact (cheat False). Qed.\n\
         Print Assumptions planted.\n"
    );
    let sneaky = "(* x *) Axiom sneaky : forall P : Prop, P.\n";
    let (ok, err) = check_assumptions(&planted, allow, &format!("{harmless}{sneaky}"));
    assert!(!ok, "an axiom not allowed passed:\n{err}");
    assert!(
        err.contains("axiom cheat is not in assumptions.allow: cheat : forall P : Prop, P"),
        "{err}"
    );
    assert!(
        err.contains("in the sources: Lists.v:") && err.contains(sneaky.trim_end()),
        "{err}"
    );
    assert!(!err.contains("allowed_axiom"), "{err}");
    assert!(!err.contains("not_code"), "{err}");
}

/// The names the proofs define: lemmas, definitions, inductive types and their constructors.
fn coq_names() -> std::collections::BTreeSet<String> {
    let dir = root().join("proofs");
    let mut names = std::collections::BTreeSet::new();
    let word = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '\'')
            .collect()
    };
    let keywords = [
        "Lemma ",
        "Theorem ",
        "Corollary ",
        "Definition ",
        "Fixpoint ",
        "Inductive ",
        "Record ",
    ];
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "v") {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let line = line.trim_start();
            for k in keywords {
                if let Some(rest) = line.strip_prefix(k) {
                    names.insert(word(rest));
                }
            }
            // A constructor: `| T_Var x t :` (match arms have `=>`, constructors do not).
            if let Some(rest) = line.strip_prefix("| ") {
                if !line.contains("=>") {
                    names.insert(word(rest));
                }
            }
        }
    }
    names
}

/// The backquoted names right after each `Coq:` in `text`, and in the `Coq` column of a
/// table row (the cell after the last-but-one `|`).
fn cited_names(text: &str) -> Vec<String> {
    let mut cited = Vec::new();
    let mut take_list = |mut rest: &str| loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        rest = rest.strip_prefix("and ").unwrap_or(rest);
        let Some(r) = rest.strip_prefix('`') else {
            break;
        };
        let Some(end) = r.find('`') else { break };
        cited.push(r[..end].to_string());
        rest = &r[end + 1..];
    };
    for (k, _) in text.match_indices("Coq:") {
        take_list(&text[k + 4..]);
    }
    for line in text.lines() {
        if line.starts_with("| [S-") {
            let cells: Vec<&str> = line.split('|').collect();
            take_list(cells[cells.len() - 2]);
        }
    }
    cited
}

/// spec/typing.md names a Coq constructor for every rule, spec/semantics.md a Coq lemma for
/// every equation (its table's third column) and for the statement rules, spec/core.md the
/// theorems it claims; every name cited exists in proofs/.
#[test]
fn every_coq_name_the_spec_cites_exists_in_the_proofs() {
    let names = coq_names();
    let spec = root().join("spec");
    let mut total = 0;
    for chapter in ["typing.md", "semantics.md", "core.md"] {
        let text = std::fs::read_to_string(spec.join(chapter)).unwrap();
        let cited = cited_names(&text);
        assert!(cited.len() >= 5, "spec/{chapter} cites only {cited:?}");
        for name in &cited {
            assert!(
                names.contains(name),
                "spec/{chapter} cites `{name}`, not in proofs/"
            );
        }
        total += cited.len();
        // Every rule paragraph of typing.md and every equation of semantics.md cites one.
        for para in text.split("\n\n") {
            let rule = ["**T-", "**S-Var**", "**OK-", "**[St-", "**[Eval-Prog]**"]
                .iter()
                .any(|p| para.starts_with(p));
            if rule {
                assert!(
                    para.contains("Coq: `"),
                    "spec/{chapter}: no Coq name in\n{para}"
                );
            }
        }
        for line in text.lines().filter(|l| l.starts_with("| [S-")) {
            assert!(
                !cited_names(line).is_empty(),
                "spec/{chapter}: no Coq name in\n{line}"
            );
        }
    }
    // 17 typing rules and the formation rules, 16 equations and the statement rules, the Core
    // theorems.
    assert!(total >= 50, "only {total} Coq names cited");
}
