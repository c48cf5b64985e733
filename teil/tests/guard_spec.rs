//! The executable examples of spec/frontends.md: `tin` and `einsum` blocks with their verdicts,
//! and the lowered programs the chapter shows after them (see the chapter's "Executable
//! examples" section for the conventions).

use std::collections::BTreeSet;
use std::path::Path;
use teil::{CheckedProgram, Code, Diagnostic};

#[derive(Debug)]
struct Block {
    line: usize,
    lang: String,
    verdict: String,
    codes: BTreeSet<String>,
    body: String,
    /// Only blank lines separate it from the previous block.
    adjacent: bool,
}

/// Every fenced block of the chapter, in order.
fn blocks() -> Vec<Block> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec/frontends.md");
    let text = std::fs::read_to_string(path).expect("spec/frontends.md is readable");
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    let mut adjacent = false;
    while let Some((n, line)) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            adjacent &= line.trim().is_empty();
            continue;
        };
        let mut words = info.split_whitespace();
        let lang = words.next().unwrap_or_default().to_string();
        let verdict = words.next().unwrap_or_default().to_string();
        let codes = words.map(str::to_string).collect();
        let mut body = String::new();
        for (_, l) in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            body.push_str(l);
            body.push('\n');
        }
        out.push(Block {
            line: n + 1,
            lang,
            verdict,
            codes,
            body,
            adjacent,
        });
        adjacent = true;
    }
    out
}

fn outcome(b: &Block) -> Result<(CheckedProgram, Vec<Diagnostic>), Vec<Diagnostic>> {
    match b.lang.as_str() {
        "tin" => teil::guard::index_notation(&b.body),
        "einsum" => {
            let mut lines = b.body.lines();
            let eq = lines.next().unwrap_or_default();
            let shapes = lines.next().unwrap_or_default();
            let shapes = teil::guard::parse_shapes(shapes).map_err(|d| vec![d])?;
            teil::guard::einsum(eq, &shapes)
        }
        other => panic!("line {}: not a front-end block: {other}", b.line),
    }
}

fn codes(d: &[Diagnostic]) -> BTreeSet<String> {
    d.iter().map(|d| d.code.as_str().to_string()).collect()
}

#[test]
fn frontends_md_examples_have_their_verdicts_and_lowerings() {
    let all = blocks();
    let mut checked = 0;
    let mut lowerings = 0;
    let mut empties = 0;
    for (k, b) in all.iter().enumerate() {
        if b.lang != "tin" && b.lang != "einsum" {
            continue;
        }
        for c in &b.codes {
            assert!(
                Code::parse(c).is_some(),
                "line {}: unknown code {c}",
                b.line
            );
        }
        if b.verdict == "empty" {
            assert_eq!(b.lang, "einsum", "line {}", b.line);
            let lines: Vec<&str> = b.body.lines().collect();
            let shapes = teil::guard::parse_shapes(lines[1]).expect("shapes parse");
            let want = teil::guard::parse_shapes(&format!("[{}]", lines[2])).expect("shape");
            match teil::guard::einsum_outcome(lines[0], &shapes) {
                Ok(teil::guard::EinsumOutcome::Empty { shape, .. }) => {
                    assert_eq!(shape, want[0], "line {}", b.line)
                }
                other => panic!("line {}: not empty: {other:?}", b.line),
            }
            checked += 1;
            empties += 1;
            continue;
        }
        let result = outcome(b);
        match (b.verdict.as_str(), &result) {
            ("ok", Ok((_, w))) => assert!(w.is_empty(), "line {}: warnings {:?}", b.line, codes(w)),
            ("warning", Ok((_, w))) => assert_eq!(codes(w), b.codes, "line {}", b.line),
            ("error", Err(d)) => assert_eq!(codes(d), b.codes, "line {}", b.line),
            (v, r) => panic!(
                "line {}: verdict `{v}` but got {:?}",
                b.line,
                r.as_ref().map(|_| ()).map_err(|d| codes(d))
            ),
        }
        checked += 1;
        // A `teil ok` block right after an accepted example is its lowering.
        if let (Ok((p, _)), Some(next)) = (&result, all.get(k + 1)) {
            if next.adjacent && next.lang == "teil" && next.verdict == "ok" {
                let (want, _) = teil::compile(&next.body)
                    .unwrap_or_else(|d| panic!("line {}: {d:?}", next.line));
                assert!(
                    p.program().same_as(want.program()),
                    "line {}: the lowering is\n{}",
                    b.line,
                    teil::fmt::program(p.program(), teil::fmt::Style::Prefix)
                );
                lowerings += 1;
            }
        }
    }
    assert!(
        checked >= 15 && lowerings >= 6 && empties >= 2,
        "{checked} examples, {lowerings} lowerings, {empties} empty results"
    );
}
