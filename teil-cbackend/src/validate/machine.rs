//! The symbolic machine: the kernel's memory (parameters, one zeroed workspace), the loop
//! variables and accumulators of the nest being run, each step by its documented meaning,
//! and the comparison of the outputs with the oracle's. The contraction steps and lane folds
//! are run by the modules of their kernel forms, as `print/` prints them.

use super::error::{Cell, TooLarge, Validated, ValidationError};
use crate::ir::*;
use std::collections::{BTreeMap, HashSet};
use teil::ast::{BinOp, ElemType, RedOp, ShapeDisplay};
use teil_interp::symbolic::Sym;
use teil_interp::{Domain, Store, Val as Number};

/// What the machine needs of a value domain beyond the oracle's operations
/// ([`teil_interp::Domain`]): recognising a literal, for a cell folded into while it holds its
/// operator's identity ([`Node::Fold`]).
///
/// Two domains run the machine: [`Sym`] (translation validation: terms, compared with the
/// oracle's in normal form) and [`Number`] (binary64 with `•`, the oracle's own domain:
/// [`evaluate`](super::evaluate), the kernel's values on given inputs).
pub trait MachineDomain: Domain {
    /// Whether the value is exactly the literal `x`: the same term, or the same bits.
    fn is_literal(&self, x: f64) -> bool;
}

impl MachineDomain for Sym {
    fn is_literal(&self, x: f64) -> bool {
        *self == Sym::lit(x)
    }
}

impl MachineDomain for Number {
    /// Bit for bit: `-0` is the identity of `+`, `+0` is not (`+0 + -0 = +0`).
    fn is_literal(&self, x: f64) -> bool {
        matches!(self, Number::Num(y) if y.to_bits() == x.to_bits())
    }
}

/// An accumulator: its operator's identity until the first fold.
#[derive(Clone)]
pub(super) enum Acc<D> {
    Identity(RedOp),
    Value(D),
}

/// `acc + v` in `elem` for a sum accumulator, as a sum's step computes it: the first step from
/// the sum's identity is `v` itself, exactly (`-0.0 + v` is `v`, spec/padding.md); every other
/// step is an addition in `elem` ([`Domain::arith`]).
pub(super) fn fold<D: Domain>(acc: &Acc<D>, v: D, elem: ElemType) -> D {
    match acc {
        Acc::Identity(RedOp::Sum) => v,
        Acc::Identity(op) => D::arith(BinOp::Add, elem, &identity(*op), &v),
        Acc::Value(a) => D::arith(BinOp::Add, elem, a, &v),
    }
}

/// `fma(x, y, c)` in the symbolic domain: the term `c + x * y` (spec/validation.md, "Fused
/// multiply-add"), with `c` an accumulator (`fma(x, y, -0.0)` is `x * y`, as `-0.0 + x * y`
/// is). Terms record operations, not roundings, so it is the term of the unfused `c + x * y`:
/// the rounding fma saves is bounded by spec/values.md, not seen here.
pub(super) fn fma<D: Domain>(x: &D, y: &D, c: &Acc<D>) -> D {
    fold(c, D::binary(BinOp::Mul, x, y), ElemType::F64)
}

/// The [`LaneFold::LANES`] lanes of a sum in lanes (a lane that added no term is the
/// identity), combined as [`LaneFold::TREE`]: the one meaning of that step, for sums in lanes
/// ([`LaneFold`]) and dot products in lanes ([`Strategy::LaneSums`]), each addition in `elem`.
pub(super) fn lane_tree<D: Domain>(mut lanes: Vec<Acc<D>>, elem: ElemType) -> D {
    for (dst, src) in LaneFold::TREE {
        let v = acc_value(lanes[src].clone());
        lanes[dst] = Acc::Value(fold(&lanes[dst], v, elem));
    }
    acc_value(lanes.swap_remove(0))
}

pub(super) fn acc_value<D: Domain>(a: Acc<D>) -> D {
    match a {
        Acc::Identity(op) => identity(op),
        Acc::Value(s) => s,
    }
}

pub(super) fn identity<D: Domain>(op: RedOp) -> D {
    D::lit(crate::ir::identity(op))
}

/// Where a buffer's cells live.
#[derive(Clone, Copy)]
pub(super) enum Home {
    /// The i-th parameter's own buffer.
    Param(usize),
    /// At this offset in the workspace.
    Workspace(u64),
    /// A parameter-role buffer that names no parameter.
    Nowhere,
}

/// The symbolic machine: the kernel's memory and the state of the nest being run.
pub(super) struct Machine<'k, D> {
    pub(super) k: &'k Kernel,
    /// Whose variants the contraction steps run.
    pub(super) target: Target,
    pub(super) params: Vec<Vec<D>>,
    pub(super) workspace: Vec<D>,
    pub(super) homes: Vec<Home>,
    pub(super) strides: Vec<Vec<u64>>,
    /// Loop variables bound in the current nest.
    pub(super) env: BTreeMap<Label, u64>,
    pub(super) accs: BTreeMap<u32, Acc<D>>,
    /// The element type of each accumulator of the current nest ([`Node::AccInit`]).
    pub(super) acc_elems: BTreeMap<u32, ElemType>,
    /// The cells (by [`Machine::locate`]) whose content is an operator's identity *as the
    /// start of a fold*: stored as an identity literal and not written since. Only into such
    /// a cell does a [`Node::Fold`] give its value itself; a cell that holds `−0` because the
    /// data is `−0` folds as an operand, as the oracle's fold does.
    pub(super) fresh: HashSet<(Option<usize>, usize)>,
    /// Where the current step is, for error messages.
    pub(super) step: usize,
}

/// The 1-based logical multi-index of a 0-based padded offset, if the cell is logical.
pub(super) fn logical_index(b: &Buffer, strides: &[u64], offset: u64) -> (Vec<u64>, bool) {
    let mut idx = Vec::with_capacity(b.padded.len());
    let mut logical = true;
    for (d, &s) in strides.iter().enumerate() {
        let i = offset.checked_div(s).unwrap_or(0) % b.padded[d].max(1);
        logical &= i < b.logical[d];
        idx.push(i + 1);
    }
    (idx, logical)
}

impl<'k, D: MachineDomain> Machine<'k, D> {
    /// The machine before the first step: the logical cells of each parameter hold
    /// `leaf(variable, 1-based index, is input)`, padding cells `0`, the workspace `0`.
    pub(super) fn new(
        k: &'k Kernel,
        target: Target,
        leaf: impl Fn(&str, Vec<u64>, bool) -> D,
    ) -> Self {
        let strides: Vec<Vec<u64>> = k.buffers.iter().map(Buffer::strides).collect();
        // In the C, a buffer is its name: a parameter-role buffer that is not itself a parameter
        // but has a parameter's C name reads that parameter's memory (with its own strides).
        let homes: Vec<Home> = k
            .buffers
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let param = k.params.iter().position(|p| p.0 == i).or_else(|| {
                    k.params
                        .iter()
                        .position(|&p| b.is_param() && k.buffer(p).c_name == b.c_name)
                });
                match param {
                    Some(i) => Home::Param(i),
                    None if b.is_param() => Home::Nowhere,
                    None => Home::Workspace(b.offset),
                }
            })
            .collect();
        let mut params = Vec::new();
        for &p in &k.params {
            let b = k.buffer(p);
            let var = b.var.clone().unwrap_or_else(|| b.c_name.clone());
            let input = matches!(b.role, Role::Param { input: true, .. });
            let cells = (0..b.padded_len())
                .map(|off| match logical_index(b, &strides[p.0], off) {
                    (idx, true) => leaf(&var, idx, input),
                    (_, false) => D::lit(0.0),
                })
                .collect();
            params.push(cells);
        }
        Machine {
            k,
            target,
            params,
            workspace: vec![D::lit(0.0); k.workspace as usize],
            homes,
            strides,
            env: BTreeMap::new(),
            accs: BTreeMap::new(),
            acc_elems: BTreeMap::new(),
            fresh: HashSet::new(),
            step: 0,
        }
    }

    pub(super) fn malformed(&self, what: String) -> ValidationError {
        let comment = self
            .k
            .steps
            .get(self.step)
            .map_or_else(String::new, |s| s.comment().to_string());
        ValidationError::Malformed {
            step: self.step + 1,
            comment,
            what,
        }
    }

    pub(super) fn buffer_name(&self, b: BufId) -> String {
        self.k
            .buffers
            .get(b.0)
            .map_or_else(|| format!("buffer #{}", b.0), |b| b.c_name.clone())
    }

    /// The cell `b[index]`: (parameter or workspace, position), checking every coordinate
    /// against the padded shape and the buffer against the workspace.
    pub(super) fn locate(
        &self,
        b: BufId,
        index: &[u64],
    ) -> Result<(Option<usize>, usize), ValidationError> {
        let buf =
            self.k.buffers.get(b.0).ok_or_else(|| {
                self.malformed(format!("access to unknown {}", self.buffer_name(b)))
            })?;
        if index.len() != buf.padded.len() || index.iter().zip(&buf.padded).any(|(&i, &n)| i >= n) {
            let one_based: Vec<u64> = index.iter().map(|i| i + 1).collect();
            return Err(self.malformed(format!(
                "out-of-bounds access {}{} (padded shape {})",
                buf.c_name,
                Cell(&one_based),
                ShapeDisplay(&buf.padded)
            )));
        }
        let off: u64 = index
            .iter()
            .zip(&self.strides[b.0])
            .map(|(&i, &s)| i * s)
            .sum();
        match self.homes[b.0] {
            Home::Param(i) => {
                let len = self.params[i].len() as u64;
                if off >= len {
                    return Err(self.malformed(format!(
                        "{}{} is past the end of its parameter's {len} cells",
                        buf.c_name,
                        Cell(&index.iter().map(|i| i + 1).collect::<Vec<_>>())
                    )));
                }
                Ok((Some(i), off as usize))
            }
            Home::Nowhere => Err(self.malformed(format!(
                "{} is a parameter buffer but not a parameter of the kernel",
                buf.c_name
            ))),
            Home::Workspace(base) => {
                let end = base.checked_add(buf.padded_len());
                if end.is_none_or(|e| e > self.k.workspace) {
                    return Err(self.malformed(format!(
                        "{} (offset {base}, {} cells) does not fit the workspace of {} cells",
                        buf.c_name,
                        buf.padded_len(),
                        self.k.workspace
                    )));
                }
                Ok((None, (base + off) as usize))
            }
        }
    }

    pub(super) fn read(&self, b: BufId, index: &[u64]) -> Result<D, ValidationError> {
        Ok(match self.locate(b, index)? {
            (Some(p), off) => self.params[p][off].clone(),
            (None, off) => self.workspace[off].clone(),
        })
    }

    pub(super) fn write(&mut self, b: BufId, index: &[u64], v: D) -> Result<(), ValidationError> {
        let at = self.locate(b, index)?;
        self.fresh.remove(&at);
        match at {
            (Some(p), off) => self.params[p][off] = v,
            (None, off) => self.workspace[off] = v,
        }
        Ok(())
    }

    pub(super) fn index(&self, idx: &[Ix]) -> Result<Vec<u64>, ValidationError> {
        idx.iter()
            .map(|ix| match ix {
                Ix::Const(c) => Ok(*c),
                Ix::Var(l) => {
                    self.env.get(l).copied().ok_or_else(|| {
                        self.malformed(format!("loop variable l{} is not bound", l.0))
                    })
                }
            })
            .collect()
    }

    pub(super) fn step(&mut self, i: usize, s: &Step) -> Result<(), ValidationError> {
        self.step = i;
        self.env.clear();
        self.accs.clear();
        self.acc_elems.clear();
        match s {
            Step::Copy { dst, src, .. } => {
                let n = self.k.buffers.get(src.0).map_or(0, Buffer::padded_len);
                let m = self.k.buffers.get(dst.0).map_or(0, Buffer::padded_len);
                if n > m {
                    return Err(self.malformed(format!(
                        "copy of {n} cells into {}, which has {m}",
                        self.buffer_name(*dst)
                    )));
                }
                // Whole padded buffers: copy cell by cell through flat offsets.
                for off in 0..n {
                    let v = self.read_flat(*src, off)?;
                    self.write_flat(*dst, off, v)?;
                }
                Ok(())
            }
            Step::Nest { body, .. } => self.nodes(body),
            Step::Contract { c, .. } => self.contract(c),
            Step::Tiled { t, .. } => self.tiled(t),
        }
    }

    /// Binds `var` for the rest of the step, rejecting a label bound twice.
    pub(super) fn bind_new(&mut self, var: Label) -> Result<(), ValidationError> {
        if self.env.insert(var, 0).is_some() {
            return Err(self.malformed(format!(
                "loop variable l{} is bound by two enclosing loops",
                var.0
            )));
        }
        Ok(())
    }

    /// `body` at every index of `labels` (the first outermost), each bound in turn: the loops
    /// around a contraction step's blocks (a packed product's batch loops, the other target
    /// loops of dot products) and inside a dot block (`Strategy::Dot::inner`).
    pub(super) fn each_index(
        &mut self,
        labels: &[Bound],
        body: &mut dyn FnMut(&mut Self) -> Result<(), ValidationError>,
    ) -> Result<(), ValidationError> {
        let Some((first, rest)) = labels.split_first() else {
            return body(self);
        };
        for v in 0..first.extent {
            self.env.insert(first.var, v);
            self.each_index(rest, body)?;
        }
        Ok(())
    }

    /// `acc + x * y` for the operands at the current labels, as a contraction step computes
    /// it: `fma(x, y, acc)` in fma mode (binary64); `acc + x` without `y` (a sum of one
    /// operand). In binary32 each operation rounds.
    pub(super) fn add_term(
        &self,
        x: &Access,
        y: Option<&Access>,
        acc: &Acc<D>,
    ) -> Result<D, ValidationError> {
        let a = self.read(x.buf, &self.index(&x.index)?)?;
        let elem = self.k.buffer(x.buf).elem;
        let step = |v: D| fold(acc, v, elem);
        let Some(y) = y else {
            return Ok(step(a));
        };
        let b = self.read(y.buf, &self.index(&y.index)?)?;
        // In binary32 the product and the sum each round (spec/values.md); a fused binary32
        // pair is the same term (terms record operations: the rounding fma saves is bounded
        // by spec/values.md, as a binary64 pair's, [`fma`]).
        Ok(if self.k.fma && elem == ElemType::F64 {
            fma(&a, &b, acc)
        } else {
            step(D::arith(BinOp::Mul, elem, &a, &b))
        })
    }

    pub(super) fn flat_index(&self, b: BufId, off: u64) -> Vec<u64> {
        let buf = self.k.buffer(b);
        self.strides[b.0]
            .iter()
            .zip(&buf.padded)
            .map(|(&s, &n)| off.checked_div(s).unwrap_or(0) % n.max(1))
            .collect()
    }

    pub(super) fn read_flat(&self, b: BufId, off: u64) -> Result<D, ValidationError> {
        self.read(b, &self.flat_index(b, off))
    }

    pub(super) fn write_flat(&mut self, b: BufId, off: u64, v: D) -> Result<(), ValidationError> {
        let idx = self.flat_index(b, off);
        self.write(b, &idx, v)
    }

    pub(super) fn nodes(&mut self, ns: &[Node]) -> Result<(), ValidationError> {
        for n in ns {
            self.node(n)?;
        }
        Ok(())
    }

    pub(super) fn node(&mut self, n: &Node) -> Result<(), ValidationError> {
        match n {
            Node::Loop {
                var,
                start,
                extent,
                body,
                ..
            } => {
                if self.env.contains_key(var) {
                    return Err(self.malformed(format!(
                        "loop variable l{} is bound by two enclosing loops",
                        var.0
                    )));
                }
                // A loop printed several rows per pass means the loop itself where its body has
                // the shape that makes the two orders agree.
                let body = match body.split_first() {
                    Some((Node::JamRows(rows), rest)) => {
                        if *rows == 0 || !crate::ir::jam_shape(*var, rest) {
                            return Err(self.malformed(format!(
                                "loop l{} jams {rows} rows of a body that is not one loop of \
                                 folds into cells of their own",
                                var.0
                            )));
                        }
                        rest
                    }
                    _ => body.as_slice(),
                };
                for v in *start..*extent {
                    self.env.insert(*var, v);
                    self.nodes(body)?;
                }
                self.env.remove(var);
                Ok(())
            }
            Node::AccInit { acc, op, elem } => {
                self.accs.insert(*acc, Acc::Identity(*op));
                self.acc_elems.insert(*acc, *elem);
                Ok(())
            }
            Node::NoJam => Ok(()),
            Node::JamRows(_) => {
                Err(self
                    .malformed("a jam of rows that is not the first node of a loop".to_string()))
            }
            // A sum in lanes: its own association (spec/padding.md, "Sums in lanes").
            Node::LaneFold(l) if l.reassociates() => self.lane_sum(l),
            // Max and min in lanes compute the loop's bits exactly (spec/padding.md, "Lane
            // reductions"): executed as that loop.
            Node::LaneFold(l) => self.node(&l.nest()),
            Node::AccUpdate { acc, op, value } => {
                let cur = self.accs.get(acc).cloned().ok_or_else(|| {
                    self.malformed(format!(
                        "accumulator acc{acc} is used before it is declared"
                    ))
                })?;
                let elem = self.acc_elem(*acc);
                // In fma mode the printer fuses a sum accumulator's `acc + x * y`; a binary32
                // pair is interpreted unfused, with its roundings, as in `add_term`.
                let fuse = self.k.fma && elem == ElemType::F64;
                if let (true, RedOp::Sum, Some((x, y))) = (fuse, op, value.product()) {
                    let next = fma(&self.val(x)?, &self.val(y)?, &cur);
                    self.accs.insert(*acc, Acc::Value(next));
                    return Ok(());
                }
                let v = self.val(value)?;
                // Each fold step rounds to the accumulator's type, as the oracle's does; the
                // first, from the identity, is exact.
                let next = match cur {
                    // identity ⊙ x = x, exactly (spec/padding.md).
                    Acc::Identity(init) if init == *op => v,
                    Acc::Identity(init) => D::fold_step_in(*op, elem, &identity(init), &v),
                    Acc::Value(a) => D::fold_step_in(*op, elem, &a, &v),
                };
                self.accs.insert(*acc, Acc::Value(next));
                Ok(())
            }
            Node::Store { buf, index, value } => {
                let v = self.val(value)?;
                let idx = self.index(index)?;
                self.write(*buf, &idx, v)?;
                // An identity literal starts the folds into the cell (interchanged nests,
                // `opt::interchange`).
                if let Val::Lit(x) = value {
                    if RedOp::ALL
                        .iter()
                        .any(|&op| crate::ir::identity(op).to_bits() == x.to_bits())
                    {
                        let at = self.locate(*buf, &idx)?;
                        self.fresh.insert(at);
                    }
                }
                Ok(())
            }
            Node::Fold {
                buf,
                index,
                op,
                value,
            } => {
                let v = self.val(value)?;
                let idx = self.index(index)?;
                let cur = self.read(*buf, &idx)?;
                // A cell that a store filled with the identity literal of `op` to start this
                // fold folds to `v`, exactly as an accumulator's identity does (binary64:
                // -0 + x = x, 1 · x = x, max(-∞, x) = x, min(∞, x) = x); any other content —
                // an identity-valued datum included — is an operand, as in the oracle's fold.
                let fresh = self.fresh.contains(&self.locate(*buf, &idx)?);
                let next = if fresh && cur.is_literal(crate::ir::identity(*op)) {
                    v
                } else {
                    D::fold_step_in(*op, self.k.buffer(*buf).elem, &cur, &v)
                };
                self.write(*buf, &idx, next)
            }
        }
    }

    /// The element type of a value of the current nest ([`Kernel::val_elem`]).
    pub(super) fn elem(&self, v: &Val) -> ElemType {
        self.k.val_elem(v, &|a| self.acc_elem(a))
    }

    /// An accumulator's element type (binary64 where none is declared: the kernel forms'
    /// accumulators, which are binary64 only).
    pub(super) fn acc_elem(&self, a: u32) -> ElemType {
        self.acc_elems.get(&a).copied().unwrap_or(ElemType::F64)
    }

    pub(super) fn val(&self, v: &Val) -> Result<D, ValidationError> {
        Ok(match v {
            Val::Load(b, idx) => self.read(*b, &self.index(idx)?)?,
            Val::Lit(x) => D::lit(*x),
            Val::Undefined => D::undefined(),
            Val::Acc(a) => match self.accs.get(a) {
                Some(Acc::Identity(op)) => identity(*op),
                Some(Acc::Value(s)) => s.clone(),
                None => {
                    return Err(
                        self.malformed(format!("accumulator acc{a} is read before it is declared"))
                    )
                }
            },
            Val::Bin(op, a, b) => {
                let elem = self.elem(v);
                match v.fused().filter(|_| self.k.fma && elem == ElemType::F64) {
                    // `x * y + c` as the printer fuses it (spec/validation.md).
                    Some((x, y, c)) => fma(&self.val(x)?, &self.val(y)?, &Acc::Value(self.val(c)?)),
                    // An operation in its element type (spec/values.md).
                    None => D::arith(*op, elem, &self.val(a)?, &self.val(b)?),
                }
            }
            Val::Func(f, a) => D::func(*f, self.elem(a), &self.val(a)?),
            Val::Func2(f, a, b) => D::func2(*f, &self.val(a)?, &self.val(b)?),
            Val::Convert(t, a) => self.val(a)?.round(*t),
        })
    }
}

impl Machine<'_, Sym> {
    /// Outputs against the oracle, input-only parameters unchanged, then every padding cell.
    pub(super) fn compare(&self, oracle: &Store<Sym>) -> Result<Validated, ValidationError> {
        let too_large = |var: &str, index: &[u64], padding: bool| {
            ValidationError::TooLarge(TooLarge::Term {
                var: var.to_string(),
                index: index.to_vec(),
                padding,
            })
        };
        let mut shapes = Vec::new();
        let mut output_cells = 0u64;
        for (i, &p) in self.k.params.iter().enumerate() {
            let b = self.k.buffer(p);
            let var = b.var.clone().unwrap_or_else(|| b.c_name.clone());
            shapes.push((var.clone(), b.logical.clone()));
            let Role::Param { input, output } = b.role else {
                continue;
            };
            if !output && !input {
                continue;
            }
            let expected = oracle.get(&var);
            for off in 0..b.padded_len() {
                let (idx, logical) = logical_index(b, &self.strides[p.0], off);
                if !logical {
                    continue;
                }
                let got = &self.params[i][off as usize];
                let want = if output {
                    let alloc = expected.ok_or_else(|| ValidationError::Malformed {
                        step: 0,
                        comment: "parameters".to_string(),
                        what: format!("parameter {var} is not a variable of the program"),
                    })?;
                    alloc
                        .offset(&idx)
                        .and_then(|o| alloc.data.get(o))
                        .cloned()
                        .ok_or_else(|| ValidationError::Malformed {
                            step: 0,
                            comment: "parameters".to_string(),
                            what: format!(
                                "parameter {var} has logical shape {} but the variable has {}",
                                ShapeDisplay(&b.logical),
                                ShapeDisplay(&alloc.extents)
                            ),
                        })?
                } else {
                    Sym::input(&var, idx.clone())
                };
                if got.is_too_large() || want.is_too_large() {
                    return Err(too_large(&var, &idx, false));
                }
                if *got != want {
                    return Err(if output {
                        ValidationError::Differs {
                            var,
                            index: idx,
                            kernel: got.clone(),
                            oracle: want,
                        }
                    } else {
                        ValidationError::InputWritten {
                            var,
                            index: idx,
                            term: got.clone(),
                        }
                    });
                }
                output_cells += u64::from(output);
            }
        }
        // Padding: parameters first, then the workspace buffers some step uses.
        let used = self.k.referenced();
        let mut order: Vec<BufId> = self.k.params.clone();
        order.extend(
            (0..self.k.buffers.len())
                .map(BufId)
                .filter(|b| used[b.0] && !self.k.buffer(*b).is_param()),
        );
        let mut padding_cells = 0u64;
        for b in order {
            let buf = self.k.buffer(b);
            for off in 0..buf.padded_len() {
                let (idx, logical) = logical_index(buf, &self.strides[b.0], off);
                if logical {
                    continue;
                }
                let v = self.read_flat(b, off)?;
                if v.is_too_large() {
                    return Err(too_large(&buf.c_name, &idx, true));
                }
                if !v.is_zero() {
                    return Err(ValidationError::Padding {
                        buffer: buf.c_name.clone(),
                        role: buf.role,
                        index: idx,
                        logical: buf.logical.clone(),
                        padded: buf.padded.clone(),
                        term: v,
                    });
                }
                padding_cells += 1;
            }
        }
        Ok(Validated {
            pad: self.k.pad,
            shapes,
            output_cells,
            padding_cells,
            lifted: self.k.lifted,
            orders: Vec::new(),
        })
    }
}
