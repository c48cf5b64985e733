//! The einsum front end: a NumPy-style equation and the operands' shapes to a checked program.
//!
//! `einsum("ij,jk->ik", &[[2, 3], [3, 4]])` yields a program with inputs `in0`, `in1`, ... (one
//! per operand, in order), the output `out`, and temporaries `t0`, `t1`, ... for the
//! intermediates of a contraction over three or more operands. The semantics are NumPy's
//! (spec/frontends.md, "einsum"): an explicit output after `->`, or the implicit output (the
//! labels that occur exactly once, in character order, after the broadcast dimensions of `...`);
//! a label repeated inside one operand takes a diagonal; an empty term is a scalar; `...` stands
//! for the dimensions not named by labels, broadcast across operands as NumPy broadcasts them
//! (right-aligned; an extent of 1 stretches to any extent, by `proj` followed by an implicit
//! `expa`). Labelled dimensions are never broadcast: every occurrence of a label must have one
//! extent (E0404).
//!
//! Every diagnostic points into the equation; [`parse_shapes`] reports into the shape list.

use super::lower::{Builder, Factor, Idx};
use super::MAX_EINSUM_OPERANDS;
use crate::ast::*;
use crate::check::CheckedProgram;
use crate::diagnostic::{Code, Diagnostic};
use std::collections::{BTreeMap, HashSet};

/// One subscript term of the equation: labels, an optional `...`, and where it was written.
#[derive(Clone, Debug)]
struct Term {
    /// The labels in order; the ellipsis, if any, sits before `labels[ellipsis.0]`.
    labels: Vec<(char, Span)>,
    ellipsis: Option<(usize, Span)>,
    span: Span,
}

#[derive(Debug)]
struct Equation {
    inputs: Vec<Term>,
    output: Option<Term>,
}

fn syntax(msg: impl Into<String>, span: Span, label: impl Into<String>) -> Diagnostic {
    Diagnostic::new(Code::EinsumSyntax, msg, span, label).with_help(
        "subscripts are ASCII letters, `...` stands for broadcast dimensions, operands are \
         separated by `,` and the output follows `->`",
    )
}

/// Reads the equation. Spaces are ignored, as in NumPy.
fn parse_equation(eq: &str) -> Result<Equation, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut inputs = Vec::new();
    let mut output: Option<Term> = None;
    let mut arrow: Option<Span> = None;
    let new_term = |at: usize| Term {
        labels: Vec::new(),
        ellipsis: None,
        span: at..at,
    };
    let mut cur = new_term(0);
    let mut started = false;
    let bytes = eq.as_bytes();
    let mut i = 0;
    while i < eq.len() {
        let c = eq[i..].chars().next().unwrap_or(' ');
        let w = c.len_utf8();
        let here = i..i + w;
        if !started && !c.is_ascii_whitespace() {
            cur.span = i..i;
            started = true;
        }
        match c {
            c if c.is_ascii_whitespace() => {}
            c if c.is_ascii_alphabetic() => {
                cur.labels.push((c, here.clone()));
                cur.span.end = here.end;
            }
            ',' if arrow.is_some() => {
                errors.push(syntax(
                    "`,` after `->`",
                    here.clone(),
                    "the output is a single term",
                ));
            }
            ',' => {
                inputs.push(std::mem::replace(&mut cur, new_term(i + 1)));
                started = false;
            }
            '-' if bytes.get(i + 1) == Some(&b'>') => {
                let span = i..i + 2;
                if let Some(first) = &arrow {
                    errors.push(
                        syntax("`->` given twice", span, "second `->`")
                            .with_label(first.clone(), "first `->`"),
                    );
                } else {
                    inputs.push(std::mem::replace(&mut cur, new_term(i + 2)));
                    started = false;
                    arrow = Some(span);
                }
                i += 2;
                continue;
            }
            '-' | '>' => {
                errors.push(syntax(
                    format!("stray `{c}`"),
                    here.clone(),
                    "`-` and `>` only occur together, as `->`",
                ));
            }
            '.' if eq[i..].starts_with("...") => {
                let span = i..i + 3;
                if let Some((_, first)) = &cur.ellipsis {
                    errors.push(
                        syntax(
                            "`...` given twice in one term",
                            span.clone(),
                            "second `...`",
                        )
                        .with_label(first.clone(), "first `...`"),
                    );
                } else {
                    cur.ellipsis = Some((cur.labels.len(), span.clone()));
                }
                cur.span.end = span.end;
                i += 3;
                continue;
            }
            '.' => {
                let n = eq[i..].bytes().take_while(|&b| b == b'.').count();
                errors.push(syntax(
                    "a lone `.`",
                    i..i + n,
                    "an ellipsis is exactly three dots",
                ));
                i += n;
                continue;
            }
            c => {
                errors.push(syntax(
                    format!("invalid character {c:?} in an einsum equation"),
                    here.clone(),
                    "not a subscript",
                ));
            }
        }
        i += w;
    }
    if !started {
        cur.span = eq.len()..eq.len();
    }
    if arrow.is_some() {
        output = Some(cur);
    } else {
        inputs.push(cur);
    }
    if errors.is_empty() {
        Ok(Equation { inputs, output })
    } else {
        Err(errors)
    }
}

/// Parses a shape list such as `[[2,3],[3,4]]` or `[[],[2,3]]` (JSON syntax: an array of arrays
/// of natural numbers). Diagnostics (E0408) point into `text`.
pub fn parse_shapes(text: &str) -> Result<Vec<Vec<u64>>, Diagnostic> {
    let mut p = ShapeParser { text, pos: 0 };
    let shapes = p.list()?;
    p.skip_ws();
    if p.pos < text.len() {
        return Err(p.error(
            "unexpected text after the shape list",
            "expected the end here",
        ));
    }
    Ok(shapes)
}

struct ShapeParser<'a> {
    text: &'a str,
    pos: usize,
}

impl ShapeParser<'_> {
    fn skip_ws(&mut self) {
        while self.text[self.pos..].starts_with(|c: char| c.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn error(&self, msg: &str, label: &str) -> Diagnostic {
        let w = self.text[self.pos..]
            .chars()
            .next()
            .map_or(0, char::len_utf8);
        Diagnostic::new(Code::ShapesSyntax, msg, self.pos..self.pos + w, label).with_help(
            "shapes are written as a JSON array of arrays of extents, e.g. `[[2,3],[3,4]]`; a \
             scalar operand has the shape `[]`",
        )
    }

    fn expect(&mut self, c: char, what: &str) -> Result<(), Diagnostic> {
        self.skip_ws();
        if self.text[self.pos..].starts_with(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(&format!("expected `{c}`"), &format!("expected {what} here")))
        }
    }

    /// `'[' (item (',' item)*)? ']'`, items parsed by `item`.
    fn seq<T>(
        &mut self,
        what: &str,
        mut item: impl FnMut(&mut Self) -> Result<T, Diagnostic>,
    ) -> Result<Vec<T>, Diagnostic> {
        self.expect('[', what)?;
        let mut out = Vec::new();
        self.skip_ws();
        if self.text[self.pos..].starts_with(']') {
            self.pos += 1;
            return Ok(out);
        }
        loop {
            out.push(item(self)?);
            self.skip_ws();
            if self.text[self.pos..].starts_with(',') {
                self.pos += 1;
            } else {
                self.expect(']', "`,` or `]`")?;
                return Ok(out);
            }
        }
    }

    fn list(&mut self) -> Result<Vec<Vec<u64>>, Diagnostic> {
        self.seq("`[` to open the list of shapes", |p| {
            p.seq("`[` to open a shape", |p| p.extent())
        })
    }

    fn extent(&mut self) -> Result<u64, Diagnostic> {
        self.skip_ws();
        let start = self.pos;
        let n = self.text[start..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        if n == 0 {
            return Err(self.error("expected an extent", "expected a natural number here"));
        }
        self.pos += n;
        self.text[start..self.pos].parse::<u64>().map_err(|_| {
            Diagnostic::new(
                Code::ShapesSyntax,
                format!(
                    "extent `{}` does not fit in 64 bits",
                    &self.text[start..self.pos]
                ),
                start..self.pos,
                "too large",
            )
        })
    }
}

fn shape_str(s: &[u64]) -> String {
    ShapeDisplay(s).to_string()
}

/// A label occurrence in an operand: where it was written, which operand and dimension, and
/// the extent it gets there.
struct Occurrence {
    span: Span,
    operand: usize,
    dim: usize,
    extent: u64,
}

/// Lowers `equation` over operands of the given shapes to a checked TeIL program (module
/// docs). `Err` carries diagnostics whose spans point into `equation`.
pub fn einsum<S: AsRef<[u64]>>(
    equation: &str,
    shapes: &[S],
) -> Result<(CheckedProgram, Vec<Diagnostic>), Vec<Diagnostic>> {
    let eq = parse_equation(equation)?;
    let shapes: Vec<&[u64]> = shapes.iter().map(AsRef::as_ref).collect();
    let whole = 0..equation.len();
    let inputs_span = match (eq.inputs.first(), eq.inputs.last()) {
        (Some(a), Some(b)) => a.span.start..b.span.end,
        _ => whole.clone(),
    };
    if eq.inputs.len() > MAX_EINSUM_OPERANDS {
        return Err(vec![Diagnostic::new(
            Code::EinsumTooManyOperands,
            format!(
                "the equation has {} operands; the limit is {MAX_EINSUM_OPERANDS}",
                eq.inputs.len()
            ),
            inputs_span,
            "too many operands",
        )]);
    }
    if eq.inputs.len() != shapes.len() {
        let n = eq.inputs.len();
        let plural = |k: usize, w: &str| format!("{k} {w}{}", if k == 1 { "" } else { "s" });
        return Err(vec![Diagnostic::new(
            Code::EinsumOperandCount,
            format!(
                "the equation has {} but {} given",
                plural(n, "operand"),
                if shapes.len() == 1 {
                    "1 shape was".to_string()
                } else {
                    format!("{} shapes were", shapes.len())
                }
            ),
            inputs_span,
            plural(n, "operand"),
        )
        .with_help(
            "give one shape per operand, in order, e.g. `--shapes '[[2,3],[3,4]]'`",
        )]);
    }

    let mut errors = Vec::new();
    // Ranks: how many dimensions each operand's `...` covers.
    let mut ell_rank = vec![0usize; shapes.len()];
    for (k, (t, s)) in eq.inputs.iter().zip(&shapes).enumerate() {
        let named = t.labels.len();
        let ok = match t.ellipsis {
            Some(_) => s.len() >= named,
            None => s.len() == named,
        };
        if !ok {
            let want = if t.ellipsis.is_some() {
                "at least "
            } else {
                ""
            };
            errors.push(
                Diagnostic::new(
                    Code::EinsumRankMismatch,
                    format!(
                        "operand {k} has {named} subscript{} but its shape {} has {} dimension{}",
                        if named == 1 { "" } else { "s" },
                        shape_str(s),
                        s.len(),
                        if s.len() == 1 { "" } else { "s" },
                    ),
                    t.span.clone(),
                    format!("needs a shape with {want}{named} dimensions"),
                )
                .with_help(if named == 0 && t.ellipsis.is_none() {
                    "an empty term stands for a scalar operand, whose shape is `[]`"
                } else {
                    "write one subscript per dimension, or `...` for the dimensions not named"
                }),
            );
            continue;
        }
        ell_rank[k] = s.len() - named;
        if s.contains(&0) {
            errors.push(
                Diagnostic::new(
                    Code::ZeroExtent,
                    format!("operand {k} has an extent of 0 (shape {})", shape_str(s)),
                    t.span.clone(),
                    "extents start at 1",
                )
                .with_help("TeIL tensors have no empty dimensions"),
            );
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }

    // Label extents (E0404).
    let mut occurrences: BTreeMap<char, Vec<Occurrence>> = BTreeMap::new();
    for (k, (t, s)) in eq.inputs.iter().zip(&shapes).enumerate() {
        for (n, (c, span)) in t.labels.iter().enumerate() {
            let dim = match t.ellipsis {
                Some((at, _)) if n >= at => n + ell_rank[k],
                _ => n,
            };
            occurrences.entry(*c).or_default().push(Occurrence {
                span: span.clone(),
                operand: k,
                dim,
                extent: s[dim],
            });
        }
    }
    for (c, occ) in &occurrences {
        let first = occ[0].extent;
        if occ.iter().all(|o| o.extent == first) {
            continue;
        }
        let mut extents: Vec<u64> = occ.iter().map(|o| o.extent).collect();
        extents.sort();
        extents.dedup();
        let here = |o: &Occurrence| {
            format!(
                "`{c}` has extent {} here (operand {}, dimension {})",
                o.extent,
                o.operand,
                o.dim + 1
            )
        };
        let mut d = Diagnostic::new(
            Code::EinsumExtentConflict,
            format!(
                "index `{c}` is bound to different extents ({})",
                extents
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            occ[0].span.clone(),
            here(&occ[0]),
        );
        for o in &occ[1..] {
            d = d.with_label(o.span.clone(), here(o));
        }
        d = d.with_note("every occurrence of an index must range over the same extent");
        if extents[0] == 1 {
            d = d.with_help(
                "NumPy would broadcast the extent 1; TeIL broadcasts only the dimensions covered \
                 by `...`",
            );
        }
        errors.push(d);
    }

    // Broadcasting of the `...` dimensions, right-aligned (E0407).
    let b_rank = ell_rank.iter().copied().max().unwrap_or(0);
    let mut b_ext = vec![1u64; b_rank];
    for (k, s) in shapes.iter().enumerate() {
        if let Some((at, _)) = eq.inputs[k].ellipsis {
            for q in 0..ell_rank[k] {
                let e = s[at + q];
                let slot = b_rank - ell_rank[k] + q;
                b_ext[slot] = b_ext[slot].max(e);
            }
        }
    }
    for slot in 0..b_rank {
        let bad: Vec<usize> = (0..shapes.len())
            .filter(|&k| {
                let Some((at, _)) = eq.inputs[k].ellipsis else {
                    return false;
                };
                let off = b_rank - ell_rank[k];
                slot >= off && {
                    let e = shapes[k][at + slot - off];
                    e != 1 && e != b_ext[slot]
                }
            })
            .collect();
        if bad.is_empty() {
            continue;
        }
        let covers = |k: usize| {
            let at = eq.inputs[k].ellipsis.as_ref().map_or(0, |e| e.0);
            format!(
                "`...` of operand {k} covers {}",
                shape_str(&shapes[k][at..at + ell_rank[k]])
            )
        };
        let span_of = |k: usize| eq.inputs[k].ellipsis.as_ref().map_or(0..0, |e| e.1.clone());
        let mut d = Diagnostic::new(
            Code::EinsumBroadcast,
            "the dimensions under `...` cannot be broadcast together",
            span_of(bad[0]),
            covers(bad[0]),
        );
        for k in (0..shapes.len()).filter(|&k| k != bad[0] && eq.inputs[k].ellipsis.is_some()) {
            d = d.with_label(span_of(k), covers(k));
        }
        errors.push(d.with_note(
            "aligned from the right, each position needs equal extents or an extent of 1",
        ));
        break;
    }

    // The output.
    let mut output: Vec<OutLabel> = Vec::new();
    match &eq.output {
        Some(t) => {
            let mut seen: BTreeMap<char, Span> = BTreeMap::new();
            for (n, (c, span)) in t.labels.iter().enumerate() {
                if t.ellipsis.as_ref().is_some_and(|(at, _)| *at == n) {
                    output.push(OutLabel::Ellipsis);
                }
                if let Some(first) = seen.get(c) {
                    errors.push(
                        Diagnostic::new(
                            Code::EinsumOutputRepeated,
                            format!("index `{c}` is repeated in the output"),
                            span.clone(),
                            "repeated here",
                        )
                        .with_label(first.clone(), "first here")
                        .with_help("an output index names one dimension of the result; take a diagonal by repeating the index in an operand instead"),
                    );
                    continue;
                }
                seen.insert(*c, span.clone());
                if !occurrences.contains_key(c) {
                    errors.push(
                        Diagnostic::new(
                            Code::EinsumOutputUnknown,
                            format!("output index `{c}` does not occur in any operand"),
                            span.clone(),
                            "not among the inputs' subscripts",
                        )
                        .with_label(inputs_span.clone(), "the operands' subscripts")
                        .with_help("every output index must occur in some operand; its extent comes from there"),
                    );
                    continue;
                }
                output.push(OutLabel::Label(*c));
            }
            if t.ellipsis
                .as_ref()
                .is_some_and(|(at, _)| *at == t.labels.len())
            {
                output.push(OutLabel::Ellipsis);
            }
            if t.ellipsis.is_none() && b_rank > 0 {
                errors.push(
                    Diagnostic::new(
                        Code::EinsumBroadcast,
                        format!(
                            "the operands' `...` cover {b_rank} dimension{} but the output has no `...`",
                            if b_rank == 1 { "" } else { "s" }
                        ),
                        t.span.clone(),
                        "no `...` here",
                    )
                    .with_help("add `...` to the output to keep the broadcast dimensions, as NumPy requires"),
                );
            }
        }
        None => {
            if b_rank > 0 {
                output.push(OutLabel::Ellipsis);
            }
            for (c, occ) in &occurrences {
                if occ.len() == 1 {
                    output.push(OutLabel::Label(*c));
                }
            }
            // Implicit output order is by character code, uppercase before lowercase (NumPy).
            output.sort_by_key(|o| match o {
                OutLabel::Ellipsis => None,
                OutLabel::Label(c) => Some(*c),
            });
        }
    }
    if !errors.is_empty() {
        errors.sort_by_key(|d| (d.primary.span.start, d.primary.span.end, d.code));
        return Err(errors);
    }

    // Index table: one label per letter (in character order), then one per `...` position.
    let letters: Vec<char> = occurrences.keys().copied().collect();
    let letter_idx = |c: char| letters.iter().position(|&x| x == c).unwrap_or(0);
    let ell_idx = |slot: usize| letters.len() + slot;
    let mut ext: Vec<u64> = letters.iter().map(|c| occurrences[c][0].extent).collect();
    ext.extend(&b_ext);

    let out_order: Vec<Idx> = output
        .iter()
        .flat_map(|o| match o {
            OutLabel::Label(c) => vec![letter_idx(*c)],
            OutLabel::Ellipsis => (0..b_rank).map(ell_idx).collect(),
        })
        .collect();
    let mut keep = vec![false; ext.len()];
    for &l in &out_order {
        keep[l] = true;
    }

    let taken: HashSet<String> = (0..shapes.len())
        .map(|k| format!("in{k}"))
        .chain(["out".to_string()])
        .collect();
    let mut b = Builder::new(taken, "t");
    b.span = whole.clone();
    let mut decls = Vec::new();
    let mut factors = Vec::new();
    for (k, (t, s)) in eq.inputs.iter().zip(&shapes).enumerate() {
        let name = format!("in{k}");
        decls.push(Decl {
            qualifier: Some(Qualifier::Input),
            name: Ident::new(name.clone(), t.span.clone()),
            extents: s.iter().map(|&n| Nat::new(n, t.span.clone())).collect(),
            span: t.span.clone(),
        });
        let mut idx = Vec::new();
        let off = b_rank - ell_rank[k];
        for (n, (c, _)) in t.labels.iter().enumerate() {
            if t.ellipsis.as_ref().is_some_and(|(at, _)| *at == n) {
                idx.extend((0..ell_rank[k]).map(|q| ell_idx(off + q)));
            }
            idx.push(letter_idx(*c));
        }
        if t.ellipsis
            .as_ref()
            .is_some_and(|(at, _)| *at == t.labels.len())
        {
            idx.extend((0..ell_rank[k]).map(|q| ell_idx(off + q)));
        }
        let mut f = Factor::new(b.var(&name, t.span.clone()), idx);
        // A broadcast extent of 1: keep slice 1 and let the missing label broadcast.
        for p in (0..f.idx.len()).rev() {
            let l = f.idx[p];
            if l >= letters.len() && s[p] == 1 && ext[l] > 1 {
                f = b.proj(f, p, 1);
            }
        }
        factors.push(f);
    }
    let result = b.contract(factors, &keep, &ext);
    let result = b.align(result, &out_order, &ext);
    let out_shape: Vec<u64> = out_order.iter().map(|&l| ext[l]).collect();
    let out_span = eq.output.as_ref().map_or(whole.clone(), |t| t.span.clone());
    decls.extend(std::mem::take(&mut b.temps));
    decls.push(Decl {
        qualifier: Some(Qualifier::Output),
        name: Ident::new("out", out_span.clone()),
        extents: out_shape
            .iter()
            .map(|&n| Nat::new(n, out_span.clone()))
            .collect(),
        span: out_span,
    });
    let mut stmts = std::mem::take(&mut b.stmts);
    stmts.push(Stmt {
        target: Ident::new("out", whole.clone()),
        value: result.expr,
        span: whole,
    });
    crate::check(Program { decls, stmts })
}

#[derive(Clone, Copy, Debug)]
enum OutLabel {
    Label(char),
    Ellipsis,
}

/// The equation with whitespace removed, as printed in the header of `teil einsum`'s output.
pub fn normalize(equation: &str) -> String {
    equation.chars().filter(|c| !c.is_whitespace()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(eq: &str) -> (Vec<String>, Option<String>) {
        let e = parse_equation(eq).expect("parses");
        let show = |t: &Term| {
            let mut s: String = t.labels.iter().map(|(c, _)| *c).collect();
            if let Some((at, _)) = t.ellipsis {
                s.insert_str(at, "...");
            }
            s
        };
        (
            e.inputs.iter().map(show).collect(),
            e.output.as_ref().map(show),
        )
    }

    #[test]
    fn equations_parse_like_numpy() {
        assert_eq!(
            terms("ij,jk->ik"),
            (vec!["ij".into(), "jk".into()], Some("ik".into()))
        );
        assert_eq!(terms(" ii "), (vec!["ii".into()], None));
        assert_eq!(terms(",ij"), (vec!["".into(), "ij".into()], None));
        assert_eq!(
            terms("...ij,j...->...i"),
            (vec!["...ij".into(), "j...".into()], Some("...i".into()))
        );
        assert_eq!(terms("i->"), (vec!["i".into()], Some("".into())));
    }

    #[test]
    fn spans_point_at_the_offending_characters() {
        let err = parse_equation("ij,j$k->ik").unwrap_err();
        assert_eq!(err[0].code, Code::EinsumSyntax);
        assert_eq!(err[0].primary.span, 4..5);
        let err = parse_equation("ij->i->j").unwrap_err();
        assert_eq!(err[0].primary.span, 5..7);
        let err = parse_equation("i..j").unwrap_err();
        assert_eq!(err[0].primary.span, 1..3);
    }

    #[test]
    fn shapes_parse_as_json_arrays() {
        assert_eq!(
            parse_shapes("[[2,3], [3, 4]]").unwrap(),
            vec![vec![2, 3], vec![3, 4]]
        );
        assert_eq!(parse_shapes(" [[],[5]] ").unwrap(), vec![vec![], vec![5]]);
        assert_eq!(parse_shapes("[]").unwrap(), Vec::<Vec<u64>>::new());
        let e = parse_shapes("[[2,x]]").unwrap_err();
        assert_eq!((e.code, e.primary.span), (Code::ShapesSyntax, 4..5));
        let e = parse_shapes("[[2,3]").unwrap_err();
        assert_eq!(e.primary.span, 6..6);
        let e = parse_shapes("[[99999999999999999999999]]").unwrap_err();
        assert_eq!(e.primary.span, 2..25);
    }
}
