//! Fuzz inputs for the front ends, and the properties every input must satisfy.
//!
//! Shared, with `#[path]`, by the proptest harness (`teil/tests/parser_fuzz.rs`, run in CI) and
//! the libFuzzer target (`fuzz/libfuzzer/fuzz_targets/front_end.rs`, long runs): both feed
//! arbitrary bytes to [`decode`], which turns them into one front-end input, and check it with
//! [`check`]. So the two harnesses explore the same input space; libFuzzer's coverage feedback
//! just steers the bytes better.
//!
//! [`decode`] reads the bytes as a little program of choices:
//! - raw bytes as TeIL source (lossy UTF-8);
//! - a corpus program under grammar-aware mutations: token deletion, duplication, swap,
//!   insertion (keywords, operators, brackets, extreme numbers, stray bytes), replacing a number,
//!   and splicing a run of tokens from another corpus program;
//! - two corpus programs spliced at token boundaries;
//! - deep nesting (parentheses, prefix applications, postfix chains, long sums, huge
//!   declarations), balanced or cut off;
//! - token soup from the vocabulary;
//! - index notation (`.tin`) and einsum equations, raw or mutated.
//!
//! [`check`] runs the whole front end (parse, check, format in both syntaxes, re-parse,
//! Core-TeIL, both diagnostic renderers) and returns the first violated property.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use teil::fmt::{self, Style};
use teil::{Code, Diagnostic};

/// Which front end an input is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    Teil(String),
    IndexNotation(String),
    /// An equation and the shapes text (`[[2,3],[3,4]]`).
    Einsum(String, String),
}

impl Input {
    pub fn len(&self) -> usize {
        match self {
            Input::Teil(s) | Input::IndexNotation(s) => s.len(),
            Input::Einsum(e, s) => e.len() + s.len(),
        }
    }
}

/// The four 10 KB inputs of the front end's size check, by name: token soup (rejected), the
/// corpus concatenated and cut at 10,000 characters (rejected: cut mid-program), one statement
/// adding 2,501 terms and 1,000 statements (both accepted). `parser_fuzz.rs` checks their
/// verdicts; `cargo bench -p teil --bench front_end` times them.
pub fn ten_kilobyte_inputs(corpus: &Corpus) -> Vec<(&'static str, Input)> {
    let soup: String = VOCABULARY
        .iter()
        .cycle()
        .take(3000)
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    let big_program: String = corpus
        .teil
        .iter()
        .flat_map(|s| s.chars())
        .take(10_000)
        .collect();
    let sum = format!("var A : [2]\nA = A{}\n", " + A".repeat(2500));
    let many_stmts = format!("var A : [2]\n{}", "A = A + A\n".repeat(1000));
    vec![
        ("token soup", Input::Teil(soup)),
        ("corpus prefix", Input::Teil(big_program)),
        ("2,501-term sum", Input::Teil(sum)),
        ("1,000 statements", Input::Teil(many_stmts)),
    ]
}

/// The programs mutations start from.
pub struct Corpus {
    pub teil: Vec<String>,
    pub tin: Vec<String>,
    pub einsum: Vec<&'static str>,
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, ext, out);
        } else if p.extension().is_some_and(|e| e == ext) {
            out.push(p);
        }
    }
}

impl Corpus {
    /// Every `.teil` and `.tin` file under `root/tests` and `root/examples`, plus a list of
    /// einsum equations covering NumPy's features.
    pub fn load(root: &Path) -> Corpus {
        let read = |ext: &str| {
            let mut paths = Vec::new();
            files(&root.join("tests"), ext, &mut paths);
            files(&root.join("examples"), ext, &mut paths);
            paths
                .iter()
                .filter_map(|p| std::fs::read_to_string(p).ok())
                .collect::<Vec<String>>()
        };
        Corpus {
            teil: read("teil"),
            tin: read("tin"),
            einsum: vec![
                "ij,jk->ik",
                "ij,jk",
                "ii->i",
                "ii",
                "ij->ji",
                "i,i->",
                "i,j->ij",
                "bij,bjk->bik",
                "...ij,...jk->...ik",
                "a...,...a->...",
                "ijk,kl,lm->ijm",
                "i->",
                "->",
                ",->",
            ],
        }
    }
}

/// A cursor over the fuzzer's bytes; reads past the end give zeros, so every byte string
/// decodes to something.
struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// A number in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        let v = usize::from(self.byte()) << 8 | usize::from(self.byte());
        if n == 0 {
            0
        } else {
            v % n
        }
    }

    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }

    fn rest(&mut self) -> &[u8] {
        let r = self.data.get(self.pos..).unwrap_or_default();
        self.pos = self.data.len();
        r
    }
}

/// Tokens that mutations insert: every keyword and operator of both syntaxes, brackets,
/// extreme and malformed numbers, and characters outside the grammar.
pub const VOCABULARY: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "+",
    "-",
    "*",
    "/",
    "#",
    ".[1 2]",
    ".[",
    "^[2 1]",
    "^[",
    "=",
    ":",
    ",",
    ";",
    ".",
    "0",
    "1",
    "2",
    "-1",
    "-0",
    "0.5",
    "1e308",
    "1e309",
    "1e-400",
    "18446744073709551616",
    "99999999999999999999",
    "4294967296",
    "alloc",
    "var",
    "input",
    "output",
    "inout",
    "add",
    "sub",
    "mul",
    "div",
    "prod",
    "red+",
    "red*",
    "redmax",
    "redmin",
    "contr",
    "transp",
    "diag",
    "expa",
    "proj",
    "transp 1 2",
    "diag 1 1",
    "expa 0 0",
    "proj 1 0",
    "contr 2 3",
    "A",
    "B",
    "x",
    "_",
    "A(i,j)",
    "(i)",
    "i",
    "j",
    "@",
    "é",
    "\u{0}",
    "\u{feff}",
    "\u{fffd}",
    "//",
    "/*",
    "*/",
    "\"",
    "\\",
    "\t",
    "\r\n",
];

/// Splits source into tokens: runs of word characters (names, numbers, `red+`, `1e-3`), and
/// every other non-space character alone. Comments and whitespace are dropped.
pub fn tokens(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in src.lines() {
        let line = line.split("//").next().unwrap_or_default();
        let mut cur = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            let word = c.is_alphanumeric() || c == '_' || c == '.' && !cur.is_empty();
            let sign = (c == '+' || c == '*') && (cur == "red")
                || (c == '-' || c == '+')
                    && cur.ends_with('e')
                    && cur.starts_with(char::is_numeric);
            if word || sign {
                cur.push(c);
                continue;
            }
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
            let _ = chars.peek();
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        out.push("\n".to_string());
    }
    out
}

fn join(toks: &[String]) -> String {
    let mut s = String::new();
    for t in toks {
        if t != "\n" && !s.is_empty() && !s.ends_with('\n') {
            s.push(' ');
        }
        s.push_str(t);
    }
    s
}

fn pick<'c>(b: &mut Bytes, list: &'c [String]) -> &'c str {
    list.get(b.below(list.len())).map_or("", String::as_str)
}

/// Up to 8 grammar-aware mutations of `src`, chosen by the bytes.
fn mutate(b: &mut Bytes, src: &str, corpus: &[String]) -> String {
    let mut toks = tokens(src);
    let rounds = 1 + b.below(8);
    for _ in 0..rounds {
        let n = toks.len();
        match b.byte() % 8 {
            0 if n > 0 => {
                toks.remove(b.below(n));
            }
            1 if n > 0 => {
                let i = b.below(n);
                let t = toks[i].clone();
                toks.insert(i, t);
            }
            2 if n > 1 => {
                let (i, j) = (b.below(n), b.below(n));
                toks.swap(i, j);
            }
            3 => {
                let t = VOCABULARY[b.below(VOCABULARY.len())].to_string();
                toks.insert(b.below(n + 1), t);
            }
            4 if n > 0 => {
                // Replace a number with another number (often an out-of-range one).
                let nums: Vec<usize> = (0..n)
                    .filter(|&i| toks[i].starts_with(|c: char| c.is_ascii_digit()))
                    .collect();
                if let Some(&i) = nums.get(b.below(nums.len())) {
                    toks[i] = match b.byte() % 6 {
                        0 => "0".to_string(),
                        1 => u64::MAX.to_string(),
                        2 => "33".to_string(),
                        3 => "1e999".to_string(),
                        4 => (u64::from(b.byte()) + 1).to_string(),
                        _ => "2".to_string(),
                    };
                }
            }
            5 => {
                // Splice a run of tokens from another corpus program.
                let other = tokens(pick(b, corpus));
                if !other.is_empty() {
                    let from = b.below(other.len());
                    let len = 1 + b.below(12);
                    let run: Vec<String> = other.iter().skip(from).take(len).cloned().collect();
                    let at = b.below(n + 1);
                    toks.splice(at..at, run);
                }
            }
            6 if n > 0 => {
                // A stray byte glued to a token.
                let i = b.below(n);
                let c = char::from(b.byte());
                toks[i].push(c);
            }
            _ if n > 0 => {
                // Delete a run.
                let i = b.below(n);
                let len = 1 + b.below(6);
                toks.drain(i..(i + len).min(n));
            }
            _ => {}
        }
    }
    join(&toks)
}

/// Deeply nested or very long constructs, balanced or cut off.
fn nesting(b: &mut Bytes) -> String {
    let depth = b.below(3000);
    let (decl, open, close) = match b.byte() % 8 {
        0 => ("alloc A : [2]", "(", ")"),
        1 => ("alloc A : [2, 2]", "transp 1 2 (", ")"),
        2 => ("alloc A : [2]", "(red+ 1 (expa 1 2 ", "))"),
        3 => ("var A : [2 2]", "", " ^[1 2]"),
        4 => ("var A : [2]", "", " + A"),
        5 => ("var A : [2]", "-", ""),
        6 => ("var A : [2 2]", "(", " .[1 2] # A)"),
        _ => {
            let extents = vec!["2"; depth].join(" ");
            return format!("var A : [{extents}]\nA = A\n");
        }
    };
    let closers = match b.byte() % 4 {
        0 => 0,
        1 => depth / 2,
        _ => depth,
    };
    format!(
        "{decl}\nA = {}A{}\n",
        open.repeat(depth),
        close.repeat(closers)
    )
}

fn shapes(b: &mut Bytes) -> String {
    if b.byte() % 8 == 0 {
        let raw: Vec<u8> = (0..b.below(40)).map(|_| b.byte()).collect();
        return String::from_utf8_lossy(&raw).into_owned();
    }
    let operands = b.below(5);
    let list: Vec<String> = (0..operands)
        .map(|_| {
            let rank = b.below(5);
            let dims: Vec<String> = (0..rank)
                .map(|_| match b.byte() % 16 {
                    0 => "0".to_string(),
                    1 => "4294967296".to_string(),
                    n => (1 + n % 4).to_string(),
                })
                .collect();
            format!("[{}]", dims.join(","))
        })
        .collect();
    format!("[{}]", list.join(","))
}

/// Turns the fuzzer's bytes into one front-end input.
pub fn decode(data: &[u8], corpus: &Corpus) -> Input {
    let mut b = Bytes { data, pos: 0 };
    match b.byte() % 10 {
        0 | 1 => Input::Teil(String::from_utf8_lossy(b.rest()).into_owned()),
        2..=4 => {
            let src = pick(&mut b, &corpus.teil).to_string();
            Input::Teil(mutate(&mut b, &src, &corpus.teil))
        }
        5 => {
            let (x, y) = (
                tokens(pick(&mut b, &corpus.teil)),
                tokens(pick(&mut b, &corpus.teil)),
            );
            let (i, j) = (b.below(x.len() + 1), b.below(y.len() + 1));
            let mut toks = x[..i].to_vec();
            toks.extend_from_slice(&y[j..]);
            Input::Teil(join(&toks))
        }
        6 => Input::Teil(nesting(&mut b)),
        7 => {
            let mut toks = Vec::new();
            while !b.done() && toks.len() < 200 {
                toks.push(VOCABULARY[b.below(VOCABULARY.len())].to_string());
            }
            Input::Teil(join(&toks))
        }
        8 => {
            if b.byte() % 4 == 0 {
                Input::IndexNotation(String::from_utf8_lossy(b.rest()).into_owned())
            } else {
                let src = pick(&mut b, &corpus.tin).to_string();
                Input::IndexNotation(mutate(&mut b, &src, &corpus.tin))
            }
        }
        _ => {
            let eq = corpus.einsum[b.below(corpus.einsum.len())];
            let eq = match b.byte() % 4 {
                0 => {
                    let raw: Vec<u8> = (0..b.below(30)).map(|_| b.byte()).collect();
                    String::from_utf8_lossy(&raw).into_owned()
                }
                1 => eq.to_string(),
                _ => {
                    let mut chars: Vec<char> = eq.chars().collect();
                    for _ in 0..1 + b.below(4) {
                        let alphabet = b"ijkab.,->  AZ_1";
                        let c = char::from(alphabet[b.below(alphabet.len())]);
                        match b.byte() % 3 {
                            0 if !chars.is_empty() => {
                                chars.remove(b.below(chars.len()));
                            }
                            _ => chars.insert(b.below(chars.len() + 1), c),
                        }
                    }
                    chars.into_iter().collect()
                }
            };
            Input::Einsum(eq, shapes(&mut b))
        }
    }
}

/// What the front end made of an input.
#[derive(Debug, Default)]
pub struct Outcome {
    pub accepted: bool,
    pub codes: Vec<&'static str>,
}

fn well_formed(diags: &[Diagnostic], src: &str) -> Result<(), String> {
    let renderer = teil::render::Renderer::new("input", src);
    for d in diags {
        let code = d.code.as_str();
        let shape_ok = code.len() == 5
            && (code.starts_with('E') || code.starts_with('W'))
            && code[1..].bytes().all(|c| c.is_ascii_digit());
        if !shape_ok || Code::parse(code) != Some(d.code) {
            return Err(format!("diagnostic with a malformed code `{code}`"));
        }
        if d.message.is_empty()
            || d.message.starts_with(char::is_uppercase)
            || d.message.ends_with('.')
        {
            return Err(format!("{code}: badly formed message `{}`", d.message));
        }
        if renderer.text(d, false).is_empty() {
            return Err(format!("{code}: empty text rendering"));
        }
        let json = renderer.json(d);
        if !json.starts_with('{') || !json.contains(code) {
            return Err(format!("{code}: bad JSON rendering {json}"));
        }
    }
    Ok(())
}

/// A rejected input must carry at least one error.
fn rejected(diags: &[Diagnostic], src: &str) -> Result<Outcome, String> {
    well_formed(diags, src)?;
    if !diags.iter().any(Diagnostic::is_error) {
        return Err("rejected without an error diagnostic".to_string());
    }
    Ok(Outcome {
        accepted: false,
        codes: diags.iter().map(|d| d.code.as_str()).collect(),
    })
}

/// Runs the front end over `input` and checks every property; `Err` names the first one
/// violated. Panics, hangs and stack overflows are the harness's to catch.
pub fn check(input: &Input) -> Result<Outcome, String> {
    match input {
        Input::Teil(src) => {
            let parsed = teil::parse(src);
            well_formed(&parsed.diagnostics, src)?;
            // The formatter must cope with whatever the parser recovered.
            for style in [Style::Prefix, Style::Infix] {
                let _ = fmt::program(&parsed.program, style);
            }
            let (checked, warnings) = match teil::compile(src) {
                Ok(ok) => ok,
                Err(diags) => return rejected(&diags, src),
            };
            well_formed(&warnings, src)?;
            // Accepted programs print and read back as the same program, unless the printed
            // form needs more nesting than the limit allows (spec/limits.md).
            for style in [Style::Prefix, Style::Infix] {
                let text = fmt::program(checked.program(), style);
                let back = teil::parse(&text);
                let errors: Vec<Code> = back
                    .diagnostics
                    .iter()
                    .filter(|d| d.is_error())
                    .map(|d| d.code)
                    .collect();
                if errors.is_empty() {
                    if !back.program.same_as(checked.program()) {
                        return Err(format!("{style:?} formatting does not round-trip:\n{text}"));
                    }
                } else if errors.iter().any(|&c| c != Code::TooDeep) {
                    return Err(format!(
                        "{style:?} formatting of an accepted program is rejected with {errors:?}:\n{text}"
                    ));
                }
            }
            match teil::core::desugar(&checked) {
                Ok(core) => {
                    if !teil::core::is_core(&core) {
                        return Err("the Core-TeIL form is not Core-TeIL".to_string());
                    }
                }
                Err(d) if d.code == Code::TooDeep => {}
                Err(d) => return Err(format!("Core-TeIL failed with {}", d.code.as_str())),
            }
            Ok(Outcome {
                accepted: true,
                codes: warnings.iter().map(|d| d.code.as_str()).collect(),
            })
        }
        Input::IndexNotation(src) => match teil::guard::index_notation(src) {
            Ok((_, warnings)) => {
                well_formed(&warnings, src)?;
                Ok(Outcome {
                    accepted: true,
                    codes: warnings.iter().map(|d| d.code.as_str()).collect(),
                })
            }
            Err(diags) => rejected(&diags, src),
        },
        Input::Einsum(eq, shapes) => {
            let shapes = match teil::guard::parse_shapes(shapes) {
                Ok(s) => s,
                Err(d) => return rejected(&[d], shapes),
            };
            match teil::guard::einsum(eq, &shapes) {
                Ok((_, warnings)) => {
                    well_formed(&warnings, eq)?;
                    Ok(Outcome {
                        accepted: true,
                        codes: Vec::new(),
                    })
                }
                Err(diags) => rejected(&diags, eq),
            }
        }
    }
}
