//! The requests of the playground, each a thin conversion between JSON and the toolchain's
//! library calls. Every answer is a JSON object; a request that cannot be answered gets
//! `{"error": MESSAGE}` (and, where the program was rejected, its `diagnostics`).
//!
//! Positions in requests and answers are the page's string indices (UTF-16 code units from the
//! start of their text), not the toolchain's byte offsets: [`Units`] converts them, through
//! the one [`LineIndex`] of the text, so the page does no arithmetic on positions.

use ndarray::{ArrayD, IxDyn};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use teil::ast::ElemType;
use teil::fmt::Style;
use teil::guard::EinsumOutcome;
use teil::ide::Analysis;
use teil::lines::LineIndex;
use teil::CodedError;
use teil::{CheckedProgram, Diagnostic};
use teil_interp::Tensor;

/// A text's positions both ways: byte offsets (the toolchain's spans) and string indices
/// (UTF-16 code units, the page's). One index per text, so an answer with many spans costs
/// linear time in the text.
struct Units<'t> {
    text: &'t str,
    index: LineIndex,
}

impl<'t> Units<'t> {
    fn new(text: &'t str) -> Self {
        Units {
            text,
            index: LineIndex::new(text),
        }
    }

    /// The string index of a byte offset.
    fn index(&self, byte: usize) -> usize {
        self.index.utf16_index(self.text, byte)
    }

    /// The byte offset of a string index.
    fn byte(&self, index: usize) -> usize {
        self.index.utf16_offset(self.text, index)
    }

    /// Every `span` object's `start` and `end` in `v` (a diagnostic of `teil check --format
    /// json`: its span, its fixes' edits), as string indices. Lines and columns stay as they
    /// are (1-based, in characters).
    fn convert_spans(&self, v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (key, item) in map.iter_mut() {
                    if key == "span" {
                        if let Value::Object(span) = item {
                            for end in ["start", "end"] {
                                if let Some(b) = span.get(end).and_then(Value::as_u64) {
                                    span[end] = json!(self.index(b as usize));
                                }
                            }
                        }
                    } else {
                        self.convert_spans(item);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.convert_spans(i)),
            _ => {}
        }
    }
}

/// Handles one JSON request (see `web/README.md` for the requests and their answers).
pub fn handle(request: &str) -> String {
    let answer = match serde_json::from_str::<Value>(request) {
        Ok(Value::Object(req)) => {
            dispatch(&req).unwrap_or_else(|message| json!({ "error": message }))
        }
        Ok(_) => json!({ "error": "the request must be a JSON object" }),
        Err(e) => json!({ "error": format!("the request is not JSON: {e}") }),
    };
    answer.to_string()
}

pub(crate) fn error_answer(message: &str) -> String {
    json!({ "error": message }).to_string()
}

type Answer = Result<Value, String>;

fn dispatch(req: &Map<String, Value>) -> Answer {
    match str_field(req, "cmd")? {
        "analyze" => analyze(req),
        "hover" => hover(req),
        "subexpressions" => subexpressions(req),
        "run" => run(req),
        "trace" => trace(req),
        "fmt" => fmt(req),
        "emit_c" => emit_c(req),
        "einsum" => einsum(req),
        "explain" => explain(req),
        "function_bits" => {
            crate::bits::function_bits(u64_field(req, "random", crate::bits::DEFAULT_RANDOM)?)
        }
        other => Err(format!("unknown request `{other}`")),
    }
}

fn str_field<'r>(req: &'r Map<String, Value>, key: &str) -> Result<&'r str, String> {
    req.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("the request needs a string `{key}`"))
}

fn u64_field(req: &Map<String, Value>, key: &str, default: u64) -> Result<u64, String> {
    match req.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("`{key}` must be a non-negative integer")),
    }
}

/// The request's syntax for the editor analysis (`teil::ide`).
fn source_kind(req: &Map<String, Value>) -> teil::ide::SourceKind {
    match file_name(req) {
        "playground.tin" => teil::ide::SourceKind::Tin,
        _ => teil::ide::SourceKind::Teil,
    }
}

/// The file name the front ends dispatch on: index notation for `"kind": "tin"`.
fn file_name(req: &Map<String, Value>) -> &'static str {
    match req.get("kind").and_then(Value::as_str) {
        Some("tin") => "playground.tin",
        _ => "playground.teil",
    }
}

/// The first [`teil::render::MAX_EDITOR_DIAGNOSTICS`] diagnostics, as the language server
/// sends them; [`omitted`] counts the rest (a megabyte of garbage has some 177,000).
fn diagnostics_json(diags: &[Diagnostic], file: &str, src: &str) -> Vec<Value> {
    let renderer = teil::render::Renderer::new(file, src);
    let units = Units::new(src);
    diags
        .iter()
        .take(teil::render::MAX_EDITOR_DIAGNOSTICS)
        .map(|d| {
            // The one JSON form of a diagnostic is the CLI's (`teil check --format json`),
            // with its spans in string indices.
            let mut v = serde_json::from_str(&renderer.json(d)).expect("render_json prints JSON");
            units.convert_spans(&mut v);
            v
        })
        .collect()
}

/// The diagnostics past the cap of [`diagnostics_json`], counted (`"3 more errors"`), or `null`.
fn omitted(diags: &[Diagnostic]) -> Value {
    let rest = diags
        .get(teil::render::MAX_EDITOR_DIAGNOSTICS..)
        .unwrap_or(&[]);
    json!(teil::render::omitted(rest))
}

/// Parses and checks the request's `source`; `Err` is the answer for a rejected program.
fn load(req: &Map<String, Value>) -> Result<(CheckedProgram, Vec<Diagnostic>, &str), Value> {
    let src = str_field(req, "source").map_err(|e| json!({ "error": e }))?;
    let file = file_name(req);
    teil::guard::load(file, src)
        .map(|(p, warnings)| (p, warnings, src))
        .map_err(|diags| {
            json!({
                "error": "the program is rejected",
                "diagnostics": diagnostics_json(&diags, file, src),
                "omitted": omitted(&diags),
            })
        })
}

/// `analyze`: diagnostics, and for a well-typed program its variables and the shape of every
/// statement's right-hand side.
fn analyze(req: &Map<String, Value>) -> Answer {
    let src = str_field(req, "source")?;
    let file = file_name(req);
    Ok(match teil::guard::load(file, src) {
        Err(diags) => {
            // The statements that check keep their shapes (as the editor's inlay hints do);
            // the others have none.
            let units = Units::new(src);
            let analysis = Analysis::new(src, source_kind(req));
            let statements: Vec<Value> = analysis
                .statements()
                .into_iter()
                .map(|s| {
                    let shape = s.shape.as_deref();
                    let text = shape.map(|t| analysis.type_text(t, s.elem));
                    statement_json(&units, &s.target, &s.span, shape, s.elem, text)
                })
                .collect();
            json!({
                "ok": false,
                "diagnostics": diagnostics_json(&diags, file, src),
                "omitted": omitted(&diags),
                "statements": statements,
                "variables": [],
            })
        }
        Ok((p, warnings)) => {
            // One index of the text for every statement (building one reads the text).
            let units = Units::new(src);
            let types = Types::of(req, src);
            let statements: Vec<Value> = p
                .program()
                .stmts
                .iter()
                .map(|s| {
                    let (shape, elem) = (p.shape(&s.value), p.elem(&s.value));
                    let text = types.text(shape, Some(elem));
                    statement_json(
                        &units,
                        &s.target.name,
                        &s.span,
                        Some(shape),
                        Some(elem),
                        Some(text),
                    )
                })
                .collect();
            let variables: Vec<Value> = p
                .program()
                .decls
                .iter()
                .map(|d| {
                    json!({
                        "name": d.name.name,
                        "shape": d.shape(),
                        "elem": d.elem.keyword(),
                        "type": types.text(&d.shape(), Some(d.elem)),
                        "qualifier": d.qualifier.map(|q| q.keyword()),
                        "input": p.is_input(d),
                        "output": p.is_output(d),
                    })
                })
                .collect();
            json!({
                "ok": true,
                "diagnostics": diagnostics_json(&warnings, file, src),
                "omitted": omitted(&warnings),
                "statements": statements,
                "variables": variables,
            })
        }
    })
}

/// One row of `analyze`'s `statements`: the target, the right-hand side's shape (`null` where
/// it does not check) and element type (`null` where its operands' conflict), its type as the
/// editor writes it, the statement's span and 1-based line.
fn statement_json(
    units: &Units<'_>,
    target: &str,
    span: &teil::Span,
    shape: Option<&[u64]>,
    elem: Option<ElemType>,
    type_text: Option<String>,
) -> Value {
    json!({
        "target": target,
        "shape": shape,
        "elem": elem.map(ElemType::keyword),
        "type": type_text,
        "start": units.index(span.start),
        "end": units.index(span.end),
        "line": units.index.line(span.start) + 1,
    })
}

/// Types as the editor writes them ([`Analysis::type_text`]: `f32[3, 4]`, or `[3, 4]` in a
/// text that names no element type).
enum Types {
    /// A text without the words `f32` and `f64` names no element type: its types are its bare
    /// shapes, known without analysing the text again (`analyze` of a well-typed text has
    /// checked it once already, and that is most of its time).
    Bare,
    Analysis(Analysis),
}

impl Types {
    /// The types of the request's text.
    fn of(req: &Map<String, Value>, src: &str) -> Types {
        if src.contains("f32") || src.contains("f64") {
            Types::Analysis(Analysis::new(src, source_kind(req)))
        } else {
            Types::Bare
        }
    }

    fn text(&self, shape: &[u64], elem: Option<ElemType>) -> String {
        match self {
            Types::Bare => teil::ast::ShapeDisplay(shape).to_string(),
            Types::Analysis(a) => a.type_text(shape, elem),
        }
    }
}

/// The budget of the playground's runs and traces (spec/limits.md, "Evaluation budgets"): a
/// browser tab has far less memory than a machine, so its memory budget is smaller; the work
/// budget is the default (10^8 steps, a few seconds, well within the 20 s after which the page
/// stops a request). Runs over these are refused up front with the evaluators' codes (E0701,
/// E0702).
fn budget() -> teil_interp::Budget {
    teil_interp::Budget {
        max_memory: 256 << 20,
        ..teil_interp::Budget::default()
    }
}

/// The editor analysis of the request's text (`teil::ide`, as the language server uses it),
/// its positions, and the request's `offset` (a string index) as a byte offset.
fn analysis(req: &Map<String, Value>) -> Result<(Analysis, Units<'_>, usize), String> {
    let src = str_field(req, "source")?;
    let kind = source_kind(req);
    let units = Units::new(src);
    let index = usize::try_from(u64_field(req, "offset", 0)?).unwrap_or(usize::MAX);
    let offset = units.byte(index);
    Ok((Analysis::new(src, kind), units, offset))
}

/// `hover`: the shape and typing rule of the innermost expression at `offset`, or a
/// variable's declaration.
fn hover(req: &Map<String, Value>) -> Answer {
    let (a, units, offset) = analysis(req)?;
    Ok(json!({
        "hover": a.hover(offset).map(|h| json!({
            "start": units.index(h.range.start),
            "end": units.index(h.range.end),
            "text": h.markdown.replace('`', ""),
            "shape": h.shape,
            "elem": h.elem.map(ElemType::keyword),
            "type": h.shape.as_deref().map(|s| a.type_text(s, h.elem)),
            "rule": h.rule,
        })),
    }))
}

/// `subexpressions`: every sub-expression of the statement at `offset`, outermost first.
fn subexpressions(req: &Map<String, Value>) -> Answer {
    let (a, units, offset) = analysis(req)?;
    let list: Vec<Value> = a
        .statement_expressions(offset)
        .into_iter()
        .map(|e| {
            json!({
                "start": units.index(e.range.start),
                "end": units.index(e.range.end),
                "text": e.text,
                "shape": e.shape,
                "elem": e.elem.map(ElemType::keyword),
                "type": e.shape.as_deref().map(|s| a.type_text(s, e.elem)),
                "rule": e.rule,
            })
        })
        .collect();
    Ok(json!({ "subexpressions": list }))
}

/// Builds the inputs: values given as nested lists win, the others are small random integers
/// from `seed` (as `teil run --random-inputs`).
fn inputs(
    p: &CheckedProgram,
    req: &Map<String, Value>,
) -> Result<BTreeMap<String, Tensor>, String> {
    // Random inputs are allocated before the evaluator's own estimate is checked.
    budget()
        .check_memory(&teil_interp::budget::fast_bytes(p))
        .map_err(|e| e.coded())?;
    let seed = u64_field(req, "seed", 1)?;
    let mut out = teil_interp::random_inputs(p, seed);
    if let Some(given) = req.get("inputs") {
        let given = given
            .as_object()
            .ok_or("`inputs` must map variable names to nested lists")?;
        // The caller boundary (`teil::interface`): only inputs take a value; the random
        // values fill every input, so none is missing.
        let names = given.keys().chain(out.keys());
        teil::interface::check_inputs(p, names.map(|n| (n.as_str(), None::<&[u64]>)))
            .map_err(|errors| teil::interface::Coded(&errors).to_string())?;
        for (name, value) in given {
            let shape = p.var_shape(name).unwrap_or_default();
            let elem = p.var_elem(name).unwrap_or_default();
            let t = from_nested(name, value, shape, elem)?;
            out.insert(name.clone(), t);
        }
    }
    Ok(out)
}

/// A tensor of element type `elem` from nested JSON lists of numbers (`null` is NaN, the
/// undefined value; the strings `"Infinity"` and `"-Infinity"` are the infinities, which JSON
/// has no numbers for). A number for an `f32` tensor is read as binary32, the binary32 value
/// nearest it, as a literal in an `f32` context is (and as [`value_json`] writes it).
fn from_nested(name: &str, value: &Value, shape: &[u64], elem: ElemType) -> Result<Tensor, String> {
    let number = |n: &serde_json::Number| match elem {
        ElemType::F64 => n.as_f64().unwrap_or(f64::NAN),
        // serde_json keeps the binary64 number nearest the text and writes it with the
        // shortest digits that read back to it: the text's own, for a text of at most 15
        // significant digits. Those read in binary32, the number is rounded once.
        ElemType::F32 => n.to_string().parse::<f32>().map_or(f64::NAN, f64::from),
    };
    fn walk(
        v: &Value,
        depth: usize,
        shape: &[u64],
        number: &dyn Fn(&serde_json::Number) -> f64,
        out: &mut Vec<f64>,
    ) -> Result<(), String> {
        if depth == shape.len() {
            out.push(match v {
                Value::Number(n) => number(n),
                Value::Null => f64::NAN,
                Value::String(s) if s == "Infinity" => f64::INFINITY,
                Value::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
                _ => return Err(format!("expected a number at depth {depth}, found {v}")),
            });
            return Ok(());
        }
        let items = v
            .as_array()
            .ok_or_else(|| format!("expected a list of {} at depth {depth}", shape[depth]))?;
        if items.len() as u64 != shape[depth] {
            return Err(format!(
                "expected {} items at depth {depth}, found {}",
                shape[depth],
                items.len()
            ));
        }
        items
            .iter()
            .try_for_each(|i| walk(i, depth + 1, shape, number, out))
    }
    let mut data = Vec::new();
    walk(value, 0, shape, &number, &mut data).map_err(|e| format!("input `{name}`: {e}"))?;
    let dims: Vec<usize> = shape.iter().map(|&n| n as usize).collect();
    ArrayD::from_shape_vec(IxDyn(&dims), data).map_err(|e| format!("input `{name}`: {e}"))
}

/// Most cells of one tensor in an answer (spec/limits.md, "Playground"). A larger tensor is
/// answered by its leading block: the last axis cut first, so that rows stay whole where they
/// can. A run within the memory budget holds up to 2^25 cells, 35 MB of JSON and 470 MB of
/// memory to build it as nested lists; a page shows a few thousand.
pub const MAX_ANSWER_CELLS: usize = 10_000;

/// The extents of the leading block of a tensor of `shape` shown in an answer: at most
/// [`MAX_ANSWER_CELLS`] cells, the last axis kept whole if it fits, then the ones before it.
fn shown_extents(shape: &[usize]) -> Vec<usize> {
    let mut left = MAX_ANSWER_CELLS;
    let mut kept: Vec<usize> = shape
        .iter()
        .rev()
        .map(|&n| {
            let k = n.min(left.max(1));
            left /= k.max(1);
            k
        })
        .collect();
    kept.reverse();
    kept
}

/// One value of a tensor of element type `elem` in an answer: a number written with the
/// shortest digits that read back to it in its type (binary32's for `f32`: `0.1`, not the
/// binary64 `0.10000000149011612` that holds it); NaN (the undefined value at the boundary) is
/// `null`; the infinities, which JSON has no numbers for, are `"Infinity"` and `"-Infinity"`
/// (what JavaScript's `Number` reads).
fn value_json(x: f64, elem: ElemType) -> Value {
    if x.is_nan() {
        Value::Null
    } else if x.is_infinite() {
        json!(if x > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        match elem {
            ElemType::F64 => json!(x),
            // serde_json holds binary64 numbers and writes their shortest digits: the binary64
            // number nearest binary32's shortest digits (at most 9 significant digits, which
            // binary64 keeps) is written with those digits.
            ElemType::F32 => json!(format!("{}", x as f32)
                .parse::<f64>()
                .expect("Rust prints a number it parses")),
        }
    }
}

/// A tensor as nested lists of [`value_json`].
fn to_nested(t: ndarray::ArrayViewD<'_, f64>, elem: ElemType) -> Value {
    fn rec(t: ndarray::ArrayViewD<'_, f64>, elem: ElemType) -> Value {
        if t.ndim() == 0 {
            return value_json(t[IxDyn(&[])], elem);
        }
        Value::Array(t.outer_iter().map(|r| rec(r, elem)).collect())
    }
    rec(t, elem)
}

fn tensors_json(
    names: impl Iterator<Item = String>,
    values: &BTreeMap<String, Tensor>,
    p: &CheckedProgram,
    types: &Types,
) -> Vec<Value> {
    names
        .filter_map(|name| {
            values.get(&name).map(|t| {
                let kept = shown_extents(t.shape());
                let block = t.slice_each_axis(|ax| ndarray::Slice::from(0..kept[ax.axis.index()]));
                let elem = p.var_elem(&name).unwrap_or_default();
                let shape = teil_interp::tensor_shape(t);
                let mut answer = json!({
                    "name": name,
                    "shape": shape,
                    "elem": elem.keyword(),
                    "type": types.text(&shape, Some(elem)),
                    "data": to_nested(block, elem),
                });
                if kept != t.shape() {
                    answer["shown"] = json!(kept);
                }
                answer
            })
        })
        .collect()
}

/// `run`: the fast evaluator on the given or random inputs; every output and every input.
fn run(req: &Map<String, Value>) -> Answer {
    let (p, _, src) = match load(req) {
        Ok(l) => l,
        Err(answer) => return Ok(answer),
    };
    let inputs = inputs(&p, req)?;
    let results = teil_interp::run_fast_with(&p, &inputs, &budget()).map_err(|e| e.coded())?;
    let decls = &p.program().decls;
    let outputs = decls
        .iter()
        .filter(|d| p.is_output(d))
        .map(|d| d.name.name.clone());
    let ins = decls
        .iter()
        .filter(|d| inputs.contains_key(&d.name.name))
        .map(|d| d.name.name.clone());
    let types = Types::of(req, src);
    Ok(json!({
        "outputs": tensors_json(outputs, &results, &p, &types),
        "inputs": tensors_json(ins, &inputs, &p, &types),
    }))
}

/// `trace`: the unfolding of the semantics at one cell, with values.
fn trace(req: &Map<String, Value>) -> Answer {
    let (p, _, src) = match load(req) {
        Ok(l) => l,
        Err(answer) => return Ok(answer),
    };
    let (name, idx) = teil::interface::parse_cell(str_field(req, "cell")?)?;
    let inputs = inputs(&p, req)?;
    let style = style(req, src);
    let lines = teil_interp::trace::trace(&p, &name, &idx, Some(&inputs), style, &budget())
        .map_err(|e| e.to_string())?;
    let units = Units::new(src);
    Ok(json!({
        "lines": lines
            .iter()
            .map(|l| json!({
                "text": l.text,
                "rule": l.rule,
                "span": l.span.as_ref().map(|s| json!({
                    "start": units.index(s.start),
                    "end": units.index(s.end),
                })),
            }))
            .collect::<Vec<_>>(),
    }))
}

/// The syntax asked for, or the one the source uses (the report's `var` means infix).
fn style(req: &Map<String, Value>, src: &str) -> Style {
    match req.get("syntax").and_then(Value::as_str) {
        Some("infix") => Style::Infix,
        Some("prefix") => Style::Prefix,
        _ => teil::interface::written_style(src),
    }
}

/// `fmt`: the canonical form in either syntax, or (`"core": true`) the Core-TeIL form.
fn fmt(req: &Map<String, Value>) -> Answer {
    let (p, _, src) = match load(req) {
        Ok(l) => l,
        Err(answer) => return Ok(answer),
    };
    let style = style(req, src);
    let program = if req.get("core").and_then(Value::as_bool) == Some(true) {
        teil::core::desugar(&p).map_err(|d| d.message)?
    } else {
        p.program().clone()
    };
    Ok(json!({ "text": teil::fmt::program(&program, style) }))
}

/// `emit_c`: the C99 kernel at padding multiple `pad`.
fn emit_c(req: &Map<String, Value>) -> Answer {
    let (p, _, _) = match load(req) {
        Ok(l) => l,
        Err(answer) => return Ok(answer),
    };
    let opts = teil_cbackend::Options {
        pad: u64_field(req, "pad", 1)?,
        ..Default::default()
    };
    let text = teil_cbackend::emit_c(&p, &opts).map_err(|e| e.coded())?;
    Ok(json!({ "text": text }))
}

/// `einsum`: an equation and operand shapes lowered to TeIL, or its diagnostics (spans into
/// the equation).
fn einsum(req: &Map<String, Value>) -> Answer {
    let equation = str_field(req, "equation")?;
    let shapes_text = str_field(req, "shapes")?;
    let shapes = match teil::guard::parse_shapes(shapes_text) {
        Ok(s) => s,
        Err(d) => {
            return Ok(json!({
                "ok": false,
                "diagnostics": diagnostics_json(&[d], "shapes", shapes_text),
                "in": "shapes",
            }))
        }
    };
    let style = match req.get("syntax").and_then(Value::as_str) {
        Some("infix") => Style::Infix,
        _ => Style::Prefix,
    };
    Ok(match teil::guard::einsum_outcome(equation, &shapes) {
        Ok(EinsumOutcome::Program(p, warnings)) => {
            let out = p.program().stmts.last().map(|s| p.shape(&s.value).to_vec());
            json!({
                "ok": true,
                "program": teil::fmt::program(p.program(), style),
                "shape": out,
                "diagnostics": diagnostics_json(&warnings, "equation", equation),
                "omitted": omitted(&warnings),
                "in": "equation",
            })
        }
        // spec/frontends.md, "Extents of 0": NumPy's result shape, and no program to open.
        Ok(EinsumOutcome::Empty { shape, operand }) => json!({
            "ok": true,
            "program": null,
            "empty_operand": operand,
            "shape": shape,
            "diagnostics": [],
            "in": "equation",
        }),
        Err(diags) => json!({
            "ok": false,
            "diagnostics": diagnostics_json(&diags, "equation", equation),
            "omitted": omitted(&diags),
            "in": "equation",
        }),
    })
}

/// `explain`: the long explanation of a diagnostic code.
fn explain(req: &Map<String, Value>) -> Answer {
    let text = str_field(req, "code")?;
    let code = teil::Code::parse(text.trim())
        .ok_or_else(|| format!("`{text}` is not a diagnostic code"))?;
    Ok(json!({
        "code": code.as_str(),
        "title": code.title(),
        "text": code.explanation(),
    }))
}
