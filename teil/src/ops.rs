//! The framework-neutral program form `ops/1` (spec/fuzzing.md, *The ops/1 form*): a checked
//! program lowered to a straight-line list of steps over named immutable values, with 0-based
//! axes, as JSON. Tensor libraries that know nothing of TeIL run it with a few lines per op
//! (`fuzz/targets/*.py`); `teil lower --ops` prints it and `teil fuzz --target` sends it.
//!
//! This is a front-end matter (it reads the checker's shapes and nothing else), so it lives
//! beside `fmt` and `core`, not in the fuzzer. The lowering, one rule per construct:
//!
//! - variables are read by name; a statement `x = e` computes `e`'s steps into fresh
//!   temporaries `%1`, `%2`, ... (never TeIL identifiers) and binds its last step to `x`, so the
//!   whole right-hand side is evaluated before `x` changes ([St-Stmt]); `x = y` is an identity
//!   `einsum`;
//! - an *index tree* — a maximal sub-tree of `#`, `transp`, `diag`, `contr`, and `red+` over
//!   one of those — becomes one `einsum` whose operands are the tree's other sub-expressions
//!   (an operand of `#` that sums is computed on its own first, since `(Σ x)·(Σ y)` is not
//!   `Σ Σ x·y` with infinities; so is one that would exceed NumPy's 52 labels);
//! - `+ - * /` become `add sub mul div` (a scalar first operand of `*`, second of `/`,
//!   scales); `red* redmax redmin`, and `red+` over anything else, become `reduce`; `expa`
//!   becomes `expand`, `proj` `take`, a literal `const` (its value in its element type);
//! - `exp log sqrt tanh erf abs` become `func` (its `name`), `max`/`min` `max`/`min`, `f32 e`
//!   and `f64 e` `cast` (its `to`);
//! - a step whose value is binary32 carries `"dtype": "float32"`, and the interface variables
//!   declared `f32` are listed in `float32` (both absent in an all-`f64` program, so such a
//!   program's document is what it always was).

use crate::ast::{BinOp, ElemType, Expr, ExprKind, Func, Func2, RedOp, Stmt};
use crate::CheckedProgram;
use serde_json::Value;
use std::collections::BTreeSet;

/// The name of the format, written into every `teil lower --ops` document.
pub const FORMAT: &str = "ops/1";

/// Labels NumPy's `einsum` accepts: `a`-`z`, then `A`-`Z`.
const LABELS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// The reductions of a `reduce` step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceKind {
    Sum,
    Prod,
    Max,
    Min,
}

impl ReduceKind {
    pub const ALL: [ReduceKind; 4] = [
        ReduceKind::Sum,
        ReduceKind::Prod,
        ReduceKind::Max,
        ReduceKind::Min,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Sum => "sum",
            ReduceKind::Prod => "prod",
            ReduceKind::Max => "max",
            ReduceKind::Min => "min",
        }
    }

    fn of(op: RedOp) -> Self {
        match op {
            RedOp::Sum => ReduceKind::Sum,
            RedOp::Product => ReduceKind::Prod,
            RedOp::Max => ReduceKind::Max,
            RedOp::Min => ReduceKind::Min,
        }
    }
}

/// What a step computes (spec/fuzzing.md gives each op's meaning in terms of TeIL's).
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// NumPy `einsum` with an explicit `->`.
    Einsum {
        equation: String,
    },
    /// Element-wise on equal shapes.
    Add,
    Sub,
    /// Element-wise on equal shapes, or a shape-`[]` first argument scaling the second.
    Mul,
    /// Element-wise on equal shapes, or a shape-`[]` second argument dividing the first.
    Div,
    /// A left fold along `axis`, which disappears.
    Reduce {
        kind: ReduceKind,
        axis: usize,
    },
    /// A new axis of length `n` at `axis`, values repeated.
    Expand {
        axis: usize,
        n: u64,
    },
    /// The slice at `index` along `axis`, which disappears.
    Take {
        axis: usize,
        index: u64,
    },
    /// A scalar.
    Const {
        value: f64,
    },
    /// An element-wise function, correctly rounded in the step's element type.
    Func {
        func: Func,
    },
    /// Element-wise on equal shapes; NaN if either is NaN, `-0 < +0`.
    Max,
    Min,
    /// Conversion to `to` (round to nearest even to binary32; exact to binary64).
    Cast {
        to: ElemType,
    },
}

impl Op {
    /// The `op` field.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Einsum { .. } => "einsum",
            Op::Add => "add",
            Op::Sub => "sub",
            Op::Mul => "mul",
            Op::Div => "div",
            Op::Reduce { .. } => "reduce",
            Op::Expand { .. } => "expand",
            Op::Take { .. } => "take",
            Op::Const { .. } => "const",
            Op::Func { .. } => "func",
            Op::Max => "max",
            Op::Min => "min",
            Op::Cast { .. } => "cast",
        }
    }
}

/// One step: `out` is bound (or rebound) to `op` applied to the values named by `args`;
/// `shape` is the result's shape, as the checker derived it.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub out: String,
    pub op: Op,
    pub args: Vec<String>,
    pub shape: Vec<u64>,
    /// The result's element type.
    pub elem: ElemType,
}

/// A whole program in ops/1 form.
#[derive(Clone, Debug, PartialEq)]
pub struct Ops {
    /// The variables the caller supplies, in declaration order, with their shapes.
    pub inputs: Vec<(String, Vec<u64>)>,
    /// The variables the caller receives, in declaration order, with their shapes.
    pub outputs: Vec<(String, Vec<u64>)>,
    /// The interface variables (inputs and outputs) declared `f32`, in declaration order.
    pub float32: Vec<String>,
    /// Variables read (or returned) before any step binds them that the caller does not supply:
    /// their value is `•` (NaN) everywhere ([Eval-Prog]). Empty for every program a fuzzing
    /// campaign sends to a target.
    pub undefined: Vec<String>,
    pub steps: Vec<Step>,
}

/// What is wrong with an ops/1 step read from JSON.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum OpsError {
    #[error("a step must be a JSON object")]
    NotAnObject,
    #[error("field `{0}` is missing or has the wrong type")]
    Field(&'static str),
    #[error("`{0}` is not an ops/1 op")]
    UnknownOp(String),
    #[error("`{0}` is not a reduction kind (sum, prod, max, min)")]
    UnknownKind(String),
    #[error("`{0}` is not an ops/1 function (exp, log, sqrt, tanh, erf, abs)")]
    UnknownFunc(String),
    #[error("`{0}` is not an element type (float32, float64)")]
    UnknownDtype(String),
}

/// Lowers a checked program to its ops/1 form.
pub fn lower(c: &CheckedProgram) -> Ops {
    let mut l = Lowering {
        c,
        steps: Vec::new(),
        temps: 0,
    };
    for s in &c.program().stmts {
        l.statement(s);
    }
    let decls = &c.program().decls;
    let shape = |name: &str| c.var_shape(name).unwrap_or_default().to_vec();
    let inputs: Vec<(String, Vec<u64>)> = decls
        .iter()
        .filter(|d| c.is_input(d))
        .map(|d| (d.name.name.clone(), shape(&d.name.name)))
        .collect();
    let outputs: Vec<(String, Vec<u64>)> = decls
        .iter()
        .filter(|d| c.is_output(d))
        .map(|d| (d.name.name.clone(), shape(&d.name.name)))
        .collect();
    let float32 = (decls.iter())
        .filter(|d| (c.is_input(d) || c.is_output(d)) && d.elem == ElemType::F32)
        .map(|d| d.name.name.clone())
        .collect();
    let mut undefined = Vec::new();
    let mut bound: BTreeSet<&str> = inputs.iter().map(|(n, _)| n.as_str()).collect();
    for s in &l.steps {
        for a in &s.args {
            if !bound.contains(a.as_str()) && !undefined.contains(a) {
                undefined.push(a.clone());
            }
        }
        bound.insert(&s.out);
    }
    for (n, _) in &outputs {
        if !bound.contains(n.as_str()) && !undefined.contains(n) {
            undefined.push(n.clone());
        }
    }
    Ops {
        inputs,
        outputs,
        float32,
        undefined,
        steps: l.steps,
    }
}

/// Whether `e` is the root of an index tree (module documentation): it lowers to an `einsum`.
fn is_index(e: &Expr) -> bool {
    match &e.strip_parens().kind {
        ExprKind::Prod(..) | ExprKind::Transp(..) | ExprKind::Diag(..) | ExprKind::Contr(..) => {
            true
        }
        ExprKind::Reduce(RedOp::Sum, _, a) => is_index(a),
        _ => false,
    }
}

struct Lowering<'a> {
    c: &'a CheckedProgram,
    steps: Vec<Step>,
    temps: usize,
}

/// An einsum under construction: operands with one label per axis, and the result's labels
/// (always distinct). Labels are numbers until [`Ein::equation`] names them.
struct Ein {
    operands: Vec<(String, Vec<usize>)>,
    out: Vec<usize>,
}

impl Ein {
    fn labels(&self) -> BTreeSet<usize> {
        self.operands
            .iter()
            .flat_map(|(_, l)| l.iter().copied())
            .collect()
    }

    /// Whether some label is summed: on an operand but not in the result.
    fn sums(&self) -> bool {
        self.labels().iter().any(|l| !self.out.contains(l))
    }

    /// Makes `from` the same label as `to` everywhere (a diagonal or a contraction).
    fn unify(&mut self, from: usize, to: usize) {
        for (_, ls) in &mut self.operands {
            for l in ls.iter_mut().filter(|l| **l == from) {
                *l = to;
            }
        }
        for l in self.out.iter_mut().filter(|l| **l == from) {
            *l = to;
        }
    }

    /// `ab,bc->ac`: letters in order of first appearance.
    fn equation(&self) -> String {
        let mut order: Vec<usize> = Vec::new();
        for l in self.operands.iter().flat_map(|(_, l)| l).chain(&self.out) {
            if !order.contains(l) {
                order.push(*l);
            }
        }
        let letter = |l: &usize| {
            let k = order.iter().position(|x| x == l).unwrap_or(0);
            char::from(LABELS[k % LABELS.len()])
        };
        let ins: Vec<String> = self
            .operands
            .iter()
            .map(|(_, ls)| ls.iter().map(letter).collect())
            .collect();
        let out: String = self.out.iter().map(letter).collect();
        format!("{}->{out}", ins.join(","))
    }
}

impl Lowering<'_> {
    fn temp(&mut self) -> String {
        self.temps += 1;
        format!("%{}", self.temps)
    }

    fn rank(&self, e: &Expr) -> usize {
        self.c.shape(e.strip_parens()).len()
    }

    fn statement(&mut self, s: &Stmt) {
        self.value(&s.value, Some(s.target.name.clone()));
    }

    /// Appends a step computing `e`'s value (its shape and element type are `e`'s).
    fn push(&mut self, out: Option<String>, op: Op, args: Vec<String>, e: &Expr) -> String {
        let out = out.unwrap_or_else(|| self.temp());
        let e = e.strip_parens();
        self.steps.push(Step {
            out: out.clone(),
            op,
            args,
            shape: self.c.shape(e).to_vec(),
            elem: self.c.elem(e),
        });
        out
    }

    /// Lowers `e` and returns the name holding its value: `out` when given (the target of a
    /// statement), a variable's own name for a variable, a fresh temporary otherwise.
    fn value(&mut self, e: &Expr, out: Option<String>) -> String {
        let e = e.strip_parens();
        let rank = self.c.shape(e).len();
        let axis = |p: u64| p as usize - 1;
        let (op, args) = match &e.kind {
            ExprKind::Var(x) => match out {
                None => return x.name.clone(),
                Some(_) => {
                    let ein = Ein {
                        operands: vec![(x.name.clone(), (0..rank).collect())],
                        out: (0..rank).collect(),
                    };
                    (
                        Op::Einsum {
                            equation: ein.equation(),
                        },
                        vec![x.name.clone()],
                    )
                }
            },
            ExprKind::Lit(v) => (
                Op::Const {
                    value: v.in_type(self.c.elem(e)),
                },
                Vec::new(),
            ),
            ExprKind::Func(func, a) => {
                let a = self.value(a, None);
                (Op::Func { func: *func }, vec![a])
            }
            ExprKind::Func2(f, a, b) => {
                let a = self.value(a, None);
                let b = self.value(b, None);
                let op = match f {
                    Func2::Max => Op::Max,
                    Func2::Min => Op::Min,
                };
                (op, vec![a, b])
            }
            ExprKind::Convert(to, a) => {
                let a = self.value(a, None);
                (Op::Cast { to: *to }, vec![a])
            }
            ExprKind::Binary(op, a, b) => {
                let a = self.value(a, None);
                let b = self.value(b, None);
                let op = match op {
                    BinOp::Add => Op::Add,
                    BinOp::Sub => Op::Sub,
                    BinOp::Mul => Op::Mul,
                    BinOp::Div => Op::Div,
                };
                (op, vec![a, b])
            }
            ExprKind::Reduce(r, p, a) if !is_index(e) => {
                let a = self.value(a, None);
                let kind = ReduceKind::of(*r);
                (
                    Op::Reduce {
                        kind,
                        axis: axis(p.value),
                    },
                    vec![a],
                )
            }
            ExprKind::Expa(p, n, a) => {
                let a = self.value(a, None);
                (
                    Op::Expand {
                        axis: axis(p.value),
                        n: n.value,
                    },
                    vec![a],
                )
            }
            ExprKind::Proj(p, m, a) => {
                let a = self.value(a, None);
                (
                    Op::Take {
                        axis: axis(p.value),
                        index: m.value - 1,
                    },
                    vec![a],
                )
            }
            // Index trees; `Error` never occurs in a checked program (parse errors are errors).
            _ => {
                let mut fresh = 0;
                let ein = self.index_tree(e, &mut fresh);
                let args = ein.operands.iter().map(|(n, _)| n.clone()).collect();
                (
                    Op::Einsum {
                        equation: ein.equation(),
                    },
                    args,
                )
            }
        };
        self.push(out, op, args, e)
    }

    /// An operand of an index tree: the tree below it, or its value under fresh labels.
    fn operand(&mut self, e: &Expr, fresh: &mut usize) -> Ein {
        if is_index(e) {
            return self.index_tree(e, fresh);
        }
        let name = self.value(e, None);
        {
            let r = self.rank(e);
            leaf(name, r, fresh)
        }
    }
}

/// An operand under fresh labels.
fn leaf(name: String, rank: usize, fresh: &mut usize) -> Ein {
    {
        let labels: Vec<usize> = (*fresh..*fresh + rank).collect();
        *fresh += rank;
        Ein {
            operands: vec![(name, labels.clone())],
            out: labels,
        }
    }
}

impl Lowering<'_> {
    /// Computes an operand of `#` on its own (when it sums, or when the labels would run out).
    fn materialise(&mut self, ein: Ein, e: &Expr, fresh: &mut usize) -> Ein {
        let args = ein.operands.iter().map(|(n, _)| n.clone()).collect();
        let op = Op::Einsum {
            equation: ein.equation(),
        };
        let name = self.push(None, op, args, e);
        {
            let r = self.rank(e);
            leaf(name, r, fresh)
        }
    }

    fn index_tree(&mut self, e: &Expr, fresh: &mut usize) -> Ein {
        let e = e.strip_parens();
        let pair = |i: u64, j: u64| (i.min(j) as usize - 1, i.max(j) as usize - 1);
        match &e.kind {
            ExprKind::Prod(a, b) => {
                let mut x = self.operand(a, fresh);
                let mut y = self.operand(b, fresh);
                // An operand that sums is computed first: (Σ x)(Σ y) is not Σ Σ x·y in IEEE
                // arithmetic (a zero times an infinity is NaN in the one, not in the other).
                if x.sums() {
                    x = self.materialise(x, a, fresh);
                }
                if y.sums() {
                    y = self.materialise(y, b, fresh);
                }
                if x.labels().len() + y.labels().len() > LABELS.len() {
                    y = self.materialise(y, b, fresh);
                    if x.labels().len() + y.labels().len() > LABELS.len() {
                        x = self.materialise(x, a, fresh);
                    }
                }
                x.operands.extend(y.operands);
                x.out.extend(y.out);
                x
            }
            ExprKind::Transp(i, j, a) => {
                let mut x = self.operand(a, fresh);
                x.out.swap(i.value as usize - 1, j.value as usize - 1);
                x
            }
            ExprKind::Diag(i, j, a) => {
                let (l, h) = pair(i.value, j.value);
                let mut x = self.operand(a, fresh);
                let gone = x.out.remove(h);
                let kept = x.out[l];
                x.unify(gone, kept);
                x
            }
            ExprKind::Contr(i, j, a) => {
                let (l, h) = pair(i.value, j.value);
                let mut x = self.operand(a, fresh);
                let gone = x.out.remove(h);
                let summed = x.out.remove(l);
                x.unify(gone, summed);
                x
            }
            ExprKind::Reduce(RedOp::Sum, p, a) => {
                let mut x = self.operand(a, fresh);
                x.out.remove(p.value as usize - 1);
                x
            }
            // Not an index node: only reached through `operand`, which checks `is_index`.
            _ => {
                let name = self.value(e, None);
                {
                    let r = self.rank(e);
                    leaf(name, r, fresh)
                }
            }
        }
    }
}

fn json_shape(s: &[u64]) -> String {
    let parts: Vec<String> = s.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

impl Step {
    /// One line of JSON, fields in the order `out`, `op`, `args`, the op's own, `shape`.
    pub fn to_json(&self) -> String {
        let args: Vec<String> = self.args.iter().map(|a| crate::json::string(a)).collect();
        let own = match &self.op {
            Op::Einsum { equation } => format!(", \"equation\": {}", crate::json::string(equation)),
            Op::Reduce { kind, axis } => {
                format!(", \"kind\": \"{}\", \"axis\": {axis}", kind.name())
            }
            Op::Expand { axis, n } => format!(", \"axis\": {axis}, \"n\": {n}"),
            Op::Take { axis, index } => format!(", \"axis\": {axis}, \"index\": {index}"),
            // Literals are finite (E0009), so the number is valid JSON.
            Op::Const { value } => format!(
                ", \"value\": {}",
                serde_json::to_string(value).unwrap_or_else(|_| "null".into())
            ),
            Op::Func { func } => format!(", \"name\": \"{}\"", func.keyword()),
            Op::Cast { to } => format!(", \"to\": \"{}\"", dtype(*to)),
            Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Max | Op::Min => String::new(),
        };
        let elem = match self.elem {
            ElemType::F64 => String::new(),
            t => format!(", \"dtype\": \"{}\"", dtype(t)),
        };
        format!(
            "{{\"out\": {}, \"op\": \"{}\", \"args\": [{}]{own}, \"shape\": {}{elem}}}",
            crate::json::string(&self.out),
            self.op.name(),
            args.join(", "),
            json_shape(&self.shape)
        )
    }

    /// Reads a step written by [`Step::to_json`] (or by hand, in the same format).
    pub fn from_json(v: &Value) -> Result<Step, OpsError> {
        let o = v.as_object().ok_or(OpsError::NotAnObject)?;
        let string = |f: &'static str| {
            o.get(f)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or(OpsError::Field(f))
        };
        let number = |f: &'static str| o.get(f).and_then(Value::as_u64).ok_or(OpsError::Field(f));
        let list = |f: &'static str| o.get(f).and_then(Value::as_array).ok_or(OpsError::Field(f));
        let args = list("args")?
            .iter()
            .map(|a| {
                a.as_str()
                    .map(str::to_string)
                    .ok_or(OpsError::Field("args"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let shape = list("shape")?
            .iter()
            .map(|n| n.as_u64().ok_or(OpsError::Field("shape")))
            .collect::<Result<Vec<_>, _>>()?;
        let op_name = string("op")?;
        let op = match op_name.as_str() {
            "einsum" => Op::Einsum {
                equation: string("equation")?,
            },
            "add" => Op::Add,
            "sub" => Op::Sub,
            "mul" => Op::Mul,
            "div" => Op::Div,
            "reduce" => {
                let k = string("kind")?;
                let kind = ReduceKind::ALL
                    .into_iter()
                    .find(|r| r.name() == k)
                    .ok_or(OpsError::UnknownKind(k))?;
                Op::Reduce {
                    kind,
                    axis: number("axis")? as usize,
                }
            }
            "expand" => Op::Expand {
                axis: number("axis")? as usize,
                n: number("n")?,
            },
            "take" => Op::Take {
                axis: number("axis")? as usize,
                index: number("index")?,
            },
            "const" => Op::Const {
                value: o
                    .get("value")
                    .and_then(Value::as_f64)
                    .ok_or(OpsError::Field("value"))?,
            },
            "func" => {
                let name = string("name")?;
                let func = Func::ALL
                    .into_iter()
                    .find(|f| f.keyword() == name)
                    .ok_or(OpsError::UnknownFunc(name))?;
                Op::Func { func }
            }
            "max" => Op::Max,
            "min" => Op::Min,
            "cast" => Op::Cast {
                to: elem_of(&string("to")?)?,
            },
            _ => return Err(OpsError::UnknownOp(op_name)),
        };
        let elem = match o.get("dtype") {
            None => ElemType::F64,
            Some(v) => elem_of(v.as_str().ok_or(OpsError::Field("dtype"))?)?,
        };
        Ok(Step {
            out: string("out")?,
            op,
            args,
            shape,
            elem,
        })
    }
}

/// An element type as ops/1 names it (NumPy's dtype names).
pub fn dtype(t: ElemType) -> &'static str {
    match t {
        ElemType::F64 => "float64",
        ElemType::F32 => "float32",
    }
}

fn elem_of(name: &str) -> Result<ElemType, OpsError> {
    (ElemType::ALL.into_iter())
        .find(|&t| dtype(t) == name)
        .ok_or_else(|| OpsError::UnknownDtype(name.to_string()))
}

/// The steps as one line of JSON (the `ops` field of a `teil-target/1` request).
pub fn steps_json(steps: &[Step]) -> String {
    let parts: Vec<String> = steps.iter().map(Step::to_json).collect();
    format!("[{}]", parts.join(", "))
}

impl Ops {
    /// Whether every step is an `einsum` (the programs of `teil fuzz --profile einsum`).
    pub fn einsum_only(&self) -> bool {
        self.steps.iter().all(|s| matches!(s.op, Op::Einsum { .. }))
    }

    /// The document `teil lower --ops` prints: the format, the interface, then one step per
    /// line.
    pub fn to_json(&self) -> String {
        let vars = |vs: &[(String, Vec<u64>)]| {
            let parts: Vec<String> = vs
                .iter()
                .map(|(n, s)| format!("{}: {}", crate::json::string(n), json_shape(s)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        };
        let undefined: Vec<String> = self
            .undefined
            .iter()
            .map(|n| crate::json::string(n))
            .collect();
        let steps: Vec<String> = self
            .steps
            .iter()
            .map(|s| format!("\n    {}", s.to_json()))
            .collect();
        let steps = if steps.is_empty() {
            String::new()
        } else {
            format!("{}\n  ", steps.join(","))
        };
        let float32 = if self.float32.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = self
                .float32
                .iter()
                .map(|n| crate::json::string(n))
                .collect();
            format!("\n  \"float32\": [{}],", names.join(", "))
        };
        format!(
            "{{\n  \"format\": \"{FORMAT}\",\n  \"inputs\": {},\n  \"outputs\": {},{float32}\n  \
             \"undefined\": [{}],\n  \"steps\": [{steps}]\n}}\n",
            vars(&self.inputs),
            vars(&self.outputs),
            undefined.join(", "),
        )
    }
}
