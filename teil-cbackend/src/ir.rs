//! The loop IR: what a lowered program is, before it is printed as C.
//!
//! A [`Kernel`] owns its buffers (parameters, internal variables, backend temporaries) and a
//! list of [`Step`]s run in order. A step is either a loop nest ([`Node`] tree) or a whole-buffer
//! copy. Loop nests contain only counted loops over index variables ([`Label`]s), scalar
//! accumulators for reductions, and stores; every index into a buffer is a loop variable or a
//! constant ([`Ix`]), so every access is an affine function of the loop variables with the
//! buffer's padded strides.
//!
//! **Architecture Invariant:** every buffer access is in bounds of the buffer's *padded* shape:
//! a loop variable indexing a dimension of logical extent `n` runs either over `0..n` or over
//! `0..⌈n⌉_M`, and `⌈n⌉_M` is that dimension's padded extent (report Def. 7, Lemma 3).
//!
//! **Architecture Invariant:** every padding cell of every buffer is zero between steps (report
//! Theorem 2), except right after a nest whose innermost loop was padded for vectorisation,
//! which the very next step re-zeroes; spec/padding.md says why every other loop that runs over
//! padded extents only ever writes zeros there.

use teil::ast::{BinOp, RedOp};

/// Index of a buffer in [`Kernel::buffers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BufId(pub usize);

/// An index variable. Each label has one logical extent; the lowering gives every dimension it
/// indexes exactly that extent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Label(pub u32);

/// One coordinate of a buffer access (0-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ix {
    Var(Label),
    Const(u64),
}

/// What a buffer is to the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A kernel parameter (report §5 qualifiers; every variable when there are none).
    Param { input: bool, output: bool },
    /// A declared variable that is not a parameter; lives in the workspace.
    Internal,
    /// A private copy of an input-only parameter that the program assigns, so the caller's
    /// buffer is never written.
    InputCopy,
    /// A backend temporary (lifted contraction, hoisted reduction, alias-safe result).
    Temp,
}

#[derive(Clone, Debug)]
pub struct Buffer {
    /// The TeIL variable this buffer holds, if any.
    pub var: Option<String>,
    /// The C identifier.
    pub c_name: String,
    pub role: Role,
    pub logical: Vec<u64>,
    /// `logical` with every extent rounded up to a multiple of M.
    pub padded: Vec<u64>,
    /// Offset into the workspace, in doubles (non-parameters only).
    pub offset: u64,
}

impl Buffer {
    /// Row-major strides of the padded layout, in elements.
    pub fn strides(&self) -> Vec<u64> {
        let mut s = vec![1u64; self.padded.len()];
        for d in (0..self.padded.len().saturating_sub(1)).rev() {
            s[d] = s[d + 1] * self.padded[d + 1];
        }
        s
    }

    /// Number of doubles in the padded layout.
    pub fn padded_len(&self) -> u64 {
        self.padded.iter().product()
    }

    pub fn logical_len(&self) -> u64 {
        self.logical.iter().product()
    }

    pub fn is_param(&self) -> bool {
        matches!(self.role, Role::Param { .. })
    }
}

/// A scalar value computed inside a loop nest.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Load(BufId, Vec<Ix>),
    Lit(f64),
    Bin(BinOp, Box<Val>, Box<Val>),
    /// The current value of an accumulator of the enclosing nest.
    Acc(u32),
    /// The undefined value `•`, NaN at the boundary (spec/values.md).
    Undefined,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// `for (var = start; var < extent; var++)`; `extent > logical` when the loop runs over
    /// the padded extent. `start` is 0 except in loops that re-zero padding.
    Loop {
        var: Label,
        start: u64,
        extent: u64,
        logical: u64,
        body: Vec<Node>,
    },
    /// Declares an accumulator holding the identity of `op` (spec/padding.md explains why
    /// starting from the identity equals the left fold from the first element).
    AccInit { acc: u32, op: RedOp },
    /// `acc = acc op value`.
    AccUpdate { acc: u32, op: RedOp, value: Val },
    Store {
        buf: BufId,
        index: Vec<Ix>,
        value: Val,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// One loop nest; `comment` names the TeIL statement it implements.
    Nest { comment: String, body: Vec<Node> },
    /// Copies a whole padded buffer (same shape), padding included.
    Copy {
        comment: String,
        dst: BufId,
        src: BufId,
    },
}

/// A lowered program.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub name: String,
    /// The padding multiple M.
    pub pad: u64,
    pub buffers: Vec<Buffer>,
    /// The parameters, in declaration order.
    pub params: Vec<BufId>,
    pub steps: Vec<Step>,
    /// Doubles of heap workspace for internal variables and temporaries.
    pub workspace: u64,
    /// How many sum-of-products regions contraction lifting rewrote (0: every value is
    /// computed with exactly the interpreter's operations, spec/padding.md).
    pub lifted: usize,
    /// How the printer may print nests (PERFORMANCE.md). These choices never change what a nest
    /// computes: a contraction nest ([`crate::opt::contract`]) may be printed as a packed
    /// matrix-product kernel or as register-blocked dot products, which compute every cell
    /// with the nest's operations in the nest's order, only working on several cells at once
    /// (spec/padding.md, "Contraction kernels"). Interpreting the steps as written gives
    /// exactly the values the printed C computes.
    pub tuning: crate::opt::Tuning,
}

impl Kernel {
    pub fn buffer(&self, b: BufId) -> &Buffer {
        &self.buffers[b.0]
    }

    /// The number of innermost operations (stores, accumulator updates and initialisations,
    /// copied elements) the kernel performs: the sum over loop nests of the products of trip
    /// counts. This is the static work measure the contraction-lifting tests assert on.
    pub fn work(&self) -> u128 {
        self.steps
            .iter()
            .map(|s| match s {
                Step::Nest { body, .. } => work(body),
                Step::Copy { src, .. } => u128::from(self.buffer(*src).padded_len()),
            })
            .sum()
    }

    /// Number of loop nests and copies.
    pub fn step_count(&self) -> usize {
        self.steps.len()
    }
}

fn work(nodes: &[Node]) -> u128 {
    nodes
        .iter()
        .map(|n| match n {
            Node::Loop {
                start,
                extent,
                body,
                ..
            } => u128::from(extent.saturating_sub(*start)).saturating_mul(work(body)),
            Node::AccInit { .. } | Node::AccUpdate { .. } | Node::Store { .. } => 1,
        })
        .fold(0u128, u128::saturating_add)
}

impl Kernel {
    /// Which buffers some step reads or writes.
    pub fn referenced(&self) -> Vec<bool> {
        let mut used = vec![false; self.buffers.len()];
        fn val(v: &Val, used: &mut [bool]) {
            match v {
                Val::Load(b, _) => used[b.0] = true,
                Val::Bin(_, a, b) => {
                    val(a, used);
                    val(b, used);
                }
                Val::Lit(_) | Val::Acc(_) | Val::Undefined => {}
            }
        }
        fn nodes(ns: &[Node], used: &mut [bool]) {
            for n in ns {
                match n {
                    Node::Loop { body, .. } => nodes(body, used),
                    Node::AccInit { .. } => {}
                    Node::AccUpdate { value, .. } => val(value, used),
                    Node::Store { buf, value, .. } => {
                        used[buf.0] = true;
                        val(value, used);
                    }
                }
            }
        }
        for s in &self.steps {
            match s {
                Step::Nest { body, .. } => nodes(body, &mut used),
                Step::Copy { dst, src, .. } => {
                    used[dst.0] = true;
                    used[src.0] = true;
                }
            }
        }
        used
    }
}
