//! The Rust checker (teil/src/check.rs) against the checker extracted from the Coq proof
//! (proofs/Checker.v, `check_prog`; README "The proof"): on every program of the corpus and on
//! fuzzer-generated programs, well-typed and ill-typed, both must agree on accept/reject, on
//! each statement's type, and on the violated rule: the extracted checker's rule and code (the
//! first premise it finds violated, named as in spec/typing.md) must be among the (rule, code)
//! pairs the Rust checker reports for that statement (or for the declarations).
//!
//! The pipeline is the one a user can replay: `teil check --ast-json FILES` prints the parsed
//! programs, `proofs/_build/teil-check` (built here by `make -C proofs checker`) answers for
//! each. Nothing is skipped silently: programs with syntax errors (they have no AST) and
//! programs that break an implementation limit (E0005, E0103, E0104, E0309, E0310: not typing
//! premises, so not in the proof) are counted and printed; without coqc/ocamlfind the test
//! fails under `CI=true` and says so loudly otherwise. `TEIL_PROOF_FUZZ=N` sets the number of
//! generated programs (a well-typed one and an ill-typed mutant each; default 1500).
//!
//! On the accepted programs, the Rust Core-TeIL desugaring (`teil::core::desugar`) is compared
//! with the one proved in Coq (`desugar_prog`, proofs/Core.v) the same way (`teil-check --core`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;
use teil::ast::Program;
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

/// Builds the extracted checker once; `None` (said loudly) when the tools are missing outside
/// CI.
fn extracted_checker() -> Option<PathBuf> {
    static CHECKER: OnceLock<Option<PathBuf>> = OnceLock::new();
    CHECKER
        .get_or_init(|| {
            let tools = [
                ("coqc", &["--version"][..]),
                ("sh", &["-c", "command -v coq_makefile"][..]),
                ("ocamlfind", &["query", "yojson"][..]),
                ("make", &["--version"][..]),
            ];
            let missing: Vec<&str> = (tools.iter())
                .filter(|(t, args)| !has(t, args))
                .map(|(t, _)| if *t == "sh" { "coq_makefile" } else { *t })
                .collect();
            if !missing.is_empty() {
                let msg = format!(
                    "the proof's checker cannot be built: {missing:?} missing or without yojson \
                     (Debian packages coq, ocaml, ocaml-findlib, libyojson-ocaml-dev; .ci/run \
                     installs them)"
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

/// What the extracted checker says about one program, and the Rust checker's view of it.
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

/// The extracted checker (with `args`) on every line: one JSON answer each, in order.
fn extracted(checker: &Path, args: &[&str], lines: &[String]) -> Vec<Value> {
    let mut child = Command::new(checker)
        .args(args)
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

/// Runs both checkers on `programs` (name, text) and asserts that they agree.
fn compare(what: &str, programs: &[(String, String)], checker: &Path) -> Figures {
    let texts: Vec<&str> = programs.iter().map(|(_, t)| t.as_str()).collect();
    let asts = ast_lines(&texts);
    let answers = extracted(checker, &[], &asts);

    let mut f = Figures::default();
    for ((name, text), answer) in programs.iter().zip(&answers) {
        f.programs += 1;
        let parsed = teil::parse(text);
        if parsed.diagnostics.iter().any(|d| d.is_error()) {
            f.syntax_errors += 1;
            continue;
        }
        let partial = check_partial(parsed.program);
        let errors: Vec<(&str, &str, std::ops::Range<usize>)> = (partial.diagnostics.iter())
            .filter(|d| d.is_error())
            .map(|d| {
                (
                    d.code.as_str(),
                    d.rule.unwrap_or("none"),
                    d.primary.span.clone(),
                )
            })
            .collect();
        if errors.iter().any(|(c, _, _)| LIMITS.contains(c)) {
            f.limits += 1;
            continue;
        }
        f.compared += 1;
        let ctx =
            |msg: &str| format!("{what}: {name}: {msg}\n{text}\nRust: {errors:?}\nCoq: {answer}");
        assert!(
            answer.get("invalid").is_none(),
            "{}",
            ctx("the AST was not read")
        );
        let decl_errors: Vec<(&str, &str)> = (errors.iter())
            .filter(|(c, _, _)| matches!(*c, "E0101" | "E0102"))
            .map(|(c, r, _)| (*c, *r))
            .collect();
        if let Some(code) = answer.get("decls") {
            let code = code.as_str().unwrap();
            let rule = answer["rule"].as_str().unwrap();
            assert!(
                decl_errors.contains(&(code, rule)),
                "{}",
                ctx("declaration error differs")
            );
            f.rejected += 1;
            *f.codes.entry(format!("{rule} {code}")).or_default() += 1;
            continue;
        }
        assert!(
            decl_errors.is_empty(),
            "{}",
            ctx("only Rust rejects a declaration")
        );
        let results = answer["stmts"].as_array().unwrap();
        let p: &Program = &partial.program;
        assert_eq!(results.len(), p.stmts.len(), "{}", ctx("statement count"));
        let mut attributed = 0;
        let mut all_ok = true;
        for (s, r) in p.stmts.iter().zip(results) {
            f.statements += 1;
            let here: Vec<(&str, &str)> = (errors.iter())
                .filter(|(_, _, sp)| sp.start >= s.span.start && sp.end <= s.span.end)
                .map(|(c, r, _)| (*c, *r))
                .collect();
            attributed += here.len();
            if let Some(t) = r.get("ok") {
                let t: Vec<u64> = serde_json::from_value(t.clone()).unwrap();
                assert!(here.is_empty(), "{}", ctx("only Rust rejects a statement"));
                assert_eq!(
                    partial.shape(&s.value),
                    Some(&t[..]),
                    "{}",
                    ctx("the statement's type differs")
                );
            } else {
                all_ok = false;
                let code = r["err"].as_str().unwrap();
                let rule = r["rule"].as_str().unwrap();
                assert!(
                    here.contains(&(code, rule)),
                    "{}",
                    ctx("the statement's error or rule differs")
                );
                *f.codes.entry(format!("{rule} {code}")).or_default() += 1;
            }
        }
        assert_eq!(
            attributed,
            errors.len(),
            "{}",
            ctx("an error outside every statement")
        );
        assert_eq!(
            all_ok,
            errors.is_empty(),
            "{}",
            ctx("accept/reject differs")
        );
        if all_ok {
            f.accepted += 1;
        } else {
            f.rejected += 1;
        }
    }
    eprintln!("{what}: {f:?}");
    f
}

/// The Rust desugaring (`teil::core::desugar`, behind `teil fmt --core`) against the one proved
/// in Coq (`desugar_prog`, proofs/Core.v, extracted): on every accepted program they must give
/// the same Core-TeIL program, parentheses aside. Returns how many were compared and how many
/// the Rust desugaring refused as too deep (E0005, a limit the proof does not have).
fn compare_core(what: &str, programs: &[(String, String)], checker: &Path) -> (usize, usize) {
    let mut originals = Vec::new();
    let mut desugared = Vec::new();
    let mut names = Vec::new();
    let mut too_deep = 0;
    for (name, text) in programs {
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
fn corpus() -> Vec<(String, String)> {
    let root = root();
    let mut files = Vec::new();
    teil_files(&root.join("tests"), &mut files);
    teil_files(&root.join("examples"), &mut files);
    let mut programs: Vec<(String, String)> = (files.iter())
        .map(|p| {
            let name = p.strip_prefix(&root).unwrap().display().to_string();
            (name, std::fs::read_to_string(p).unwrap())
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
                    programs.push((name, std::mem::take(b)));
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
    let programs = corpus();
    let f = compare("corpus", &programs, &checker);
    // The corpus has hundreds of programs, accepted and rejected: a broken walk or reader
    // would show here.
    assert!(f.compared >= 200, "{f:?}");
    assert!(f.accepted >= 100 && f.rejected >= 50, "{f:?}");
    let (core, too_deep) = compare_core("corpus", &programs, &checker);
    assert_eq!(
        core + too_deep,
        f.accepted,
        "every accepted program desugared"
    );
}

#[test]
fn the_extracted_checker_agrees_with_the_rust_checker_on_generated_programs() {
    let Some(checker) = extracted_checker() else {
        return;
    };
    let n: u64 = std::env::var("TEIL_PROOF_FUZZ").map_or(1500, |v| v.parse().unwrap());
    let mut programs = Vec::new();
    for seed in 0..n {
        let p = sample(&program(flavour(seed)), seed);
        let text = fmt::program(
            &p,
            if seed % 2 == 0 {
                Style::Prefix
            } else {
                Style::Infix
            },
        );
        let checked = teil::check(p)
            .expect("the generator makes well-typed programs")
            .0;
        programs.push((format!("seed {seed}"), text));
        let m = Mutation::ALL[seed as usize % Mutation::ALL.len()];
        if let Some(bad) = ill_typed(&checked, m, (seed / 12) as usize) {
            programs.push((
                format!("seed {seed}, {m:?}"),
                fmt::program(&bad, Style::Prefix),
            ));
        }
    }
    let f = compare("generated", &programs, &checker);
    assert_eq!(f.syntax_errors, 0, "{f:?}");
    let (core, too_deep) = compare_core("generated", &programs, &checker);
    assert_eq!(
        (core, too_deep),
        (f.accepted, 0),
        "every accepted program desugared"
    );
    assert!(f.accepted as u64 >= n * 9 / 10, "{f:?}");
    assert!(f.rejected as u64 >= n / 2, "{f:?}");
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
