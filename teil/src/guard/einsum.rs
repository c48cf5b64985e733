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
//! `expa`). A letter broadcasts the same way: inside one operand its dimensions must be equal, and
//! across operands an extent of 1 stretches to the letter's other extent (E0404 otherwise).
//!
//! Every diagnostic points into the equation; [`parse_shapes`] reports into the shape list. The
//! errors are [`FrontEndError`]s, worded in `error.rs`.

use super::error::{
    EllipsisCover, EquationProblem, FrontEndError, LabelUse, ShapesExpected, ShapesProblem,
};
use super::lower::{Builder, Factor, Idx};
use super::MAX_EINSUM_OPERANDS;
use crate::ast::*;
use crate::check::CheckedProgram;
use crate::diagnostic::Diagnostic;
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

fn syntax(span: Span, problem: EquationProblem) -> FrontEndError {
    FrontEndError::Equation { span, problem }
}

/// Reads the equation. Spaces are ignored, as in NumPy.
fn parse_equation(eq: &str) -> Result<Equation, Vec<FrontEndError>> {
    let mut errors = Vec::new();
    // Invalid characters, each once with its first occurrence: they make one error.
    let mut invalid: Vec<(char, Span)> = Vec::new();
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
            // Any Unicode letter, as opt_einsum accepts (`αβ,βγ->αγ`); NumPy takes ASCII only.
            c if c.is_alphabetic() => {
                cur.labels.push((c, here.clone()));
                cur.span.end = here.end;
            }
            ',' if arrow.is_some() => {
                errors.push(syntax(here.clone(), EquationProblem::CommaAfterArrow));
            }
            ',' => {
                inputs.push(std::mem::replace(&mut cur, new_term(i + 1)));
                started = false;
            }
            '-' if bytes.get(i + 1) == Some(&b'>') => {
                let span = i..i + 2;
                if let Some(first) = &arrow {
                    let first = first.clone();
                    errors.push(syntax(span, EquationProblem::ArrowTwice { first }));
                } else {
                    inputs.push(std::mem::replace(&mut cur, new_term(i + 2)));
                    started = false;
                    arrow = Some(span);
                }
                i += 2;
                continue;
            }
            '-' | '>' => {
                errors.push(syntax(here.clone(), EquationProblem::Stray(c)));
            }
            '.' if eq[i..].starts_with("...") => {
                let span = i..i + 3;
                if let Some((_, first)) = &cur.ellipsis {
                    let first = first.clone();
                    errors.push(syntax(
                        span.clone(),
                        EquationProblem::EllipsisTwice { first },
                    ));
                } else {
                    cur.ellipsis = Some((cur.labels.len(), span.clone()));
                }
                cur.span.end = span.end;
                i += 3;
                continue;
            }
            '.' => {
                let n = eq[i..].bytes().take_while(|&b| b == b'.').count();
                errors.push(syntax(i..i + n, EquationProblem::LoneDot));
                i += n;
                continue;
            }
            c => match invalid.iter().position(|(x, _)| *x == c) {
                Some(_) => {}
                None => invalid.push((c, here.clone())),
            },
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
    if let Some((_, first)) = invalid.first() {
        errors.push(syntax(
            first.clone(),
            EquationProblem::InvalidChars {
                chars: invalid.iter().map(|(c, _)| *c).collect(),
                others: invalid[1..].iter().map(|(_, s)| s.clone()).collect(),
            },
        ));
        errors.sort_by_key(|e| e.span().start);
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
        return Err(p.error(ShapesProblem::Trailing).into());
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

    /// The error `problem` at the character at the current position.
    fn error(&self, problem: ShapesProblem) -> FrontEndError {
        let w = self.text[self.pos..]
            .chars()
            .next()
            .map_or(0, char::len_utf8);
        FrontEndError::Shapes {
            span: self.pos..self.pos + w,
            problem,
        }
    }

    fn expect(&mut self, what: ShapesExpected) -> Result<(), FrontEndError> {
        self.skip_ws();
        if self.text[self.pos..].starts_with(what.bracket()) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(ShapesProblem::Expected(what)))
        }
    }

    /// `'[' (item (',' item)*)? ']'`, items parsed by `item`; `open` names the `[`.
    fn seq<T>(
        &mut self,
        open: ShapesExpected,
        mut item: impl FnMut(&mut Self) -> Result<T, FrontEndError>,
    ) -> Result<Vec<T>, FrontEndError> {
        self.expect(open)?;
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
                self.expect(ShapesExpected::CommaOrClose)?;
                return Ok(out);
            }
        }
    }

    fn list(&mut self) -> Result<Vec<Vec<u64>>, FrontEndError> {
        self.seq(ShapesExpected::OpenList, |p| {
            p.seq(ShapesExpected::OpenShape, |p| p.extent())
        })
    }

    fn extent(&mut self) -> Result<u64, FrontEndError> {
        self.skip_ws();
        let start = self.pos;
        let n = self.text[start..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        if n == 0 {
            return Err(self.error(ShapesProblem::ExpectedExtent));
        }
        self.pos += n;
        let written = &self.text[start..self.pos];
        written.parse::<u64>().map_err(|_| FrontEndError::Shapes {
            span: start..self.pos,
            problem: ShapesProblem::ExtentTooLarge(written.to_string()),
        })
    }
}

/// Lowers `equation` over operands of the given shapes to a checked TeIL program (module
/// docs), every variable `f64`. `Err` carries diagnostics whose spans point into `equation`.
/// An operand with an extent of 0 has no TeIL program (E0102, at its term): [`einsum_outcome`]
/// gives its result.
pub fn einsum<S: AsRef<[u64]>>(
    equation: &str,
    shapes: &[S],
) -> Result<(CheckedProgram, Vec<Diagnostic>), Vec<Diagnostic>> {
    einsum_elem(equation, shapes, ElemType::F64)
}

/// [`einsum`] with every variable (the operands `in0`, `in1`, ..., the temporaries and `out`)
/// declared of the element type `elem`: the program computes in `elem`, as NumPy computes an
/// einsum of operands of one dtype in that dtype. The equation and the shapes are checked
/// exactly as by [`einsum`], with the same diagnostics; only the declarations differ.
pub fn einsum_elem<S: AsRef<[u64]>>(
    equation: &str,
    shapes: &[S],
    elem: ElemType,
) -> Result<(CheckedProgram, Vec<Diagnostic>), Vec<Diagnostic>> {
    let shapes: Vec<&[u64]> = shapes.iter().map(AsRef::as_ref).collect();
    match lower(equation, &shapes, elem) {
        Ok(Lowered::Program(program)) => crate::check(program),
        Ok(Lowered::Empty {
            operand,
            span,
            shape,
        }) => Err(vec![Diagnostic::from(FrontEndError::EinsumZeroExtent {
            span,
            operand,
            shape: shapes[operand].to_vec(),
            result: shape,
        })]),
        Err(errors) => Err(errors.into_iter().map(Diagnostic::from).collect()),
    }
}

/// What an einsum equation over operands of given shapes comes to ([`einsum_outcome`]).
#[derive(Debug)]
pub enum EinsumOutcome {
    /// The checked TeIL program and its warnings, as [`einsum`] returns them.
    Program(CheckedProgram, Vec<Diagnostic>),
    /// Some operand has an extent of 0, so no TeIL program is lowered (TeIL tensors have no
    /// empty dimensions). The result, by NumPy's rules, has the shape `shape` and holds only
    /// zeros: none at all when `shape` has an extent of 0, otherwise every element is a sum over
    /// an empty index. `operand` is the first operand with an extent of 0.
    Empty { shape: Vec<u64>, operand: usize },
}

/// [`einsum`], except that operands with an extent of 0 are accepted as NumPy accepts them:
/// every front-end check still applies (an extent of 0 broadcasts only against 1), and the
/// result is [`EinsumOutcome::Empty`] with NumPy's result shape instead of a program.
pub fn einsum_outcome<S: AsRef<[u64]>>(
    equation: &str,
    shapes: &[S],
) -> Result<EinsumOutcome, Vec<Diagnostic>> {
    einsum_outcome_elem(equation, shapes, ElemType::F64)
}

/// [`einsum_outcome`] with every variable of the program declared of the element type `elem`
/// ([`einsum_elem`]); the outcome is otherwise the same.
pub fn einsum_outcome_elem<S: AsRef<[u64]>>(
    equation: &str,
    shapes: &[S],
    elem: ElemType,
) -> Result<EinsumOutcome, Vec<Diagnostic>> {
    let shapes: Vec<&[u64]> = shapes.iter().map(AsRef::as_ref).collect();
    match lower(equation, &shapes, elem) {
        Ok(Lowered::Program(program)) => {
            crate::check(program).map(|(p, w)| EinsumOutcome::Program(p, w))
        }
        Ok(Lowered::Empty { shape, operand, .. }) => Ok(EinsumOutcome::Empty { shape, operand }),
        Err(errors) => Err(errors.into_iter().map(Diagnostic::from).collect()),
    }
}

/// The result of [`lower`]: a program, or the shape of a result with no program.
enum Lowered {
    Program(Program),
    /// The first operand with an extent of 0 (its term at `span`) and the result's shape.
    Empty {
        shape: Vec<u64>,
        operand: usize,
        span: Span,
    },
}

/// The TeIL program of `equation` over operands of the given shapes, every variable of
/// element type `elem`, not yet checked.
fn lower(equation: &str, shapes: &[&[u64]], elem: ElemType) -> Result<Lowered, Vec<FrontEndError>> {
    let eq = parse_equation(equation)?;
    let whole = 0..equation.len();
    let inputs_span = match (eq.inputs.first(), eq.inputs.last()) {
        (Some(a), Some(b)) => a.span.start..b.span.end,
        _ => whole.clone(),
    };
    if eq.inputs.len() > MAX_EINSUM_OPERANDS {
        return Err(vec![FrontEndError::EinsumTooManyOperands {
            span: inputs_span,
            operands: eq.inputs.len(),
        }]);
    }
    if eq.inputs.len() != shapes.len() {
        return Err(vec![FrontEndError::EinsumOperandCount {
            span: inputs_span,
            operands: eq.inputs.len(),
            shapes: shapes.len(),
        }]);
    }

    let mut errors = Vec::new();
    // Ranks: how many dimensions each operand's `...` covers.
    let mut ell_rank = vec![0usize; shapes.len()];
    for (k, (t, s)) in eq.inputs.iter().zip(shapes).enumerate() {
        let named = t.labels.len();
        let ok = match t.ellipsis {
            Some(_) => s.len() >= named,
            None => s.len() == named,
        };
        if !ok {
            errors.push(FrontEndError::EinsumRankMismatch {
                span: t.span.clone(),
                operand: k,
                named,
                ellipsis: t.ellipsis.is_some(),
                shape: s.to_vec(),
            });
            continue;
        }
        ell_rank[k] = s.len() - named;
    }
    if !errors.is_empty() {
        return Err(errors);
    }

    // Label extents (E0404).
    let mut occurrences: BTreeMap<char, Vec<LabelUse>> = BTreeMap::new();
    for (k, (t, s)) in eq.inputs.iter().zip(shapes).enumerate() {
        for (n, (c, span)) in t.labels.iter().enumerate() {
            let dim = match t.ellipsis {
                Some((at, _)) if n >= at => n + ell_rank[k],
                _ => n,
            };
            occurrences.entry(*c).or_default().push(LabelUse {
                span: span.clone(),
                operand: k,
                dim,
                extent: s[dim],
            });
        }
    }
    for (c, occ) in &occurrences {
        // NumPy's rules: inside one operand the dimensions of a label are equal (a diagonal);
        // across operands an extent of 1 broadcasts against the label's one other extent.
        let within = occ.iter().all(|o| {
            occ.iter()
                .all(|p| p.operand != o.operand || p.extent == o.extent)
        });
        let n = label_extent(occ);
        if within && occ.iter().all(|o| o.extent == 1 || o.extent == n) {
            continue;
        }
        errors.push(FrontEndError::EinsumExtentConflict {
            label: *c,
            first: occ[0].clone(),
            others: occ[1..].to_vec(),
        });
    }

    // Broadcasting of the `...` dimensions, right-aligned (E0407).
    let b_rank = ell_rank.iter().copied().max().unwrap_or(0);
    let mut b_ext = vec![1u64; b_rank];
    for (k, s) in shapes.iter().enumerate() {
        if let Some((at, _)) = eq.inputs[k].ellipsis {
            for q in 0..ell_rank[k] {
                let e = s[at + q];
                let slot = b_rank - ell_rank[k] + q;
                if e != 1 {
                    b_ext[slot] = e;
                }
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
        let cover = |k: usize| {
            let (at, span) = eq.inputs[k].ellipsis.clone().unwrap_or((0, 0..0));
            EllipsisCover {
                span,
                operand: k,
                covers: shapes[k][at..at + ell_rank[k]].to_vec(),
            }
        };
        let others = (0..shapes.len())
            .filter(|&k| k != bad[0] && eq.inputs[k].ellipsis.is_some())
            .map(cover)
            .collect();
        errors.push(FrontEndError::EinsumBroadcast {
            first: cover(bad[0]),
            others,
        });
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
                    errors.push(FrontEndError::EinsumOutputRepeated {
                        span: span.clone(),
                        label: *c,
                        first: first.clone(),
                    });
                    continue;
                }
                seen.insert(*c, span.clone());
                if !occurrences.contains_key(c) {
                    errors.push(FrontEndError::EinsumOutputUnknown {
                        span: span.clone(),
                        label: *c,
                        inputs: inputs_span.clone(),
                    });
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
                errors.push(FrontEndError::EinsumOutputWithoutEllipsis {
                    span: t.span.clone(),
                    dims: b_rank,
                });
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
        errors.sort_by_key(|e| (e.span().start, e.span().end, e.code()));
        return Err(errors);
    }

    // Index table: one label per letter (in character order), then one per `...` position.
    let letters: Vec<char> = occurrences.keys().copied().collect();
    let letter_idx = |c: char| letters.iter().position(|&x| x == c).unwrap_or(0);
    let ell_idx = |slot: usize| letters.len() + slot;
    let mut ext: Vec<u64> = letters
        .iter()
        .map(|c| label_extent(&occurrences[c]))
        .collect();
    ext.extend(&b_ext);

    let out_order: Vec<Idx> = output
        .iter()
        .flat_map(|o| match o {
            OutLabel::Label(c) => vec![letter_idx(*c)],
            OutLabel::Ellipsis => (0..b_rank).map(ell_idx).collect(),
        })
        .collect();
    // An extent of 0 (NumPy accepts it; TeIL has no empty tensors): the result's shape only.
    if let Some(k) = shapes.iter().position(|s| s.contains(&0)) {
        return Ok(Lowered::Empty {
            shape: out_order.iter().map(|&l| ext[l]).collect(),
            operand: k,
            span: eq.inputs[k].span.clone(),
        });
    }
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
    b.elem = elem;
    let mut decls = Vec::new();
    let mut factors = Vec::new();
    for (k, (t, s)) in eq.inputs.iter().zip(shapes).enumerate() {
        let name = format!("in{k}");
        decls.push(Decl {
            qualifier: Some(Qualifier::Input),
            name: Ident::new(name.clone(), t.span.clone()),
            elem,
            elem_span: None,
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
        // A broadcast extent of 1 (of a letter or under `...`): keep slice 1 and let the
        // missing label broadcast (`proj p 1`, then `expa` or the product of another factor).
        for p in (0..f.idx.len()).rev() {
            let l = f.idx[p];
            if s[p] == 1 && ext[l] != 1 {
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
        elem,
        elem_span: None,
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
    Ok(Lowered::Program(Program { decls, stmts }))
}

/// The extent of a label over all its occurrences: the one extent other than 1, if any (NumPy
/// broadcasts an extent of 1 against it), else 1.
fn label_extent(occ: &[LabelUse]) -> u64 {
    occ.iter().map(|o| o.extent).find(|&e| e != 1).unwrap_or(1)
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
    use crate::diagnostic::Code;

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
        assert_eq!(
            terms("αβ,βγ->αγ"),
            (vec!["αβ".into(), "βγ".into()], Some("αγ".into()))
        );
    }

    #[test]
    fn spans_point_at_the_offending_characters() {
        let err = parse_equation("ij,j$k->ik").unwrap_err();
        assert_eq!(err[0].code(), Code::EinsumSyntax);
        assert_eq!(err[0].span(), &(4..5));
        let err = parse_equation("ij->i->j").unwrap_err();
        assert_eq!(err[0].span(), &(5..7));
        let err = parse_equation("i..j").unwrap_err();
        assert_eq!(err[0].span(), &(1..3));
        // Every invalid character makes one error, at the first; a later `->` error keeps its own.
        let err = parse_equation("i2,2$->i->i").unwrap_err();
        assert_eq!(err.len(), 2);
        assert_eq!(err[0].span(), &(1..2));
        assert_eq!(err[1].span(), &(8..10));
        // Spans are byte offsets: `β` is two bytes.
        let err = parse_equation("β1").unwrap_err();
        assert_eq!(err[0].span(), &(2..3));
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
