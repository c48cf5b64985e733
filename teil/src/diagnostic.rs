//! Diagnostics as data: a stable code, a severity, a message, labelled spans, notes and help.
//!
//! Each phase reports an error enum worded into [`Diagnostic`]s in one place: the parse phase a
//! [`crate::parse_error::ParseError`] ([`crate::parse_error`]), the checker a
//! [`crate::check_error::CheckError`] ([`crate::check_error`]), the guard front ends a
//! [`crate::guard::FrontEndError`] ([`crate::guard::error`]). Rendering (ariadne text, JSON
//! lines) lives in [`crate::render`]. Every code is listed, with a minimal example, in
//! `spec/diagnostics.md`, and `teil explain CODE` prints [`Code::explanation`].

use crate::ast::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// A quick fix: text edits that carry out one suggestion of a diagnostic's help. Fixes are
/// built beside the help text, where the checker knows the spans, so that editors apply them
/// without reading messages (`teil lsp` code actions, the `fixes` key of JSON output).
#[derive(Clone, Debug, PartialEq)]
pub struct Fix {
    /// What the fix does, as an editor shows it (`replace with \`contr 2 4\``).
    pub title: String,
    /// Non-overlapping edits, in source order; applied together.
    pub edits: Vec<Edit>,
}

/// Replace the text at `span` with `replacement` (an empty span inserts, an empty replacement
/// deletes).
#[derive(Clone, Debug, PartialEq)]
pub struct Edit {
    pub span: Span,
    pub replacement: String,
}

impl Fix {
    /// A fix made of one replacement.
    pub fn replace(title: impl Into<String>, span: Span, replacement: impl Into<String>) -> Self {
        Fix {
            title: title.into(),
            edits: vec![Edit {
                span,
                replacement: replacement.into(),
            }],
        }
    }

    /// Applies the fix to `src`; `None` when an edit is out of bounds, off a character
    /// boundary, or overlaps the one before it.
    pub fn apply(&self, src: &str) -> Option<String> {
        let mut out = String::with_capacity(src.len());
        let mut at = 0;
        for e in &self.edits {
            if e.span.start < at || e.span.end < e.span.start {
                return None;
            }
            out.push_str(src.get(at..e.span.start)?);
            src.get(e.span.clone())?;
            out.push_str(&e.replacement);
            at = e.span.end;
        }
        out.push_str(src.get(at..)?);
        Some(out)
    }
}

/// A span with a message attached, as shown under the source line.
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

impl Label {
    pub fn new(span: Span, message: impl Into<String>) -> Self {
        Label {
            span,
            message: message.into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    /// The typing or formation rule that was violated, by its name in the spec (e.g. `T-Diag`).
    pub rule: Option<&'static str>,
    /// Where the problem is.
    pub primary: Label,
    /// Context: operand shapes, the earlier declaration, ...
    pub secondary: Vec<Label>,
    pub notes: Vec<String>,
    pub help: Option<String>,
    /// The help's suggestions as edits, when it makes any.
    pub fixes: Vec<Fix>,
}

impl Diagnostic {
    pub fn new(
        code: Code,
        message: impl Into<String>,
        span: Span,
        label: impl Into<String>,
    ) -> Self {
        Diagnostic {
            code,
            severity: code.severity(),
            message: message.into(),
            rule: None,
            primary: Label::new(span, label),
            secondary: Vec::new(),
            notes: Vec::new(),
            help: None,
            fixes: Vec::new(),
        }
    }

    pub fn with_rule(mut self, rule: &'static str) -> Self {
        self.rule = Some(rule);
        self
    }

    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> Self {
        self.secondary.push(Label::new(span, message));
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Attaches a quick fix (see [`Fix`]).
    pub fn with_fix(mut self, fix: Fix) -> Self {
        self.fixes.push(fix);
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Edit distance between two words, by characters: insertions, deletions, substitutions and
/// transpositions of two adjacent characters each count one (the optimal string alignment
/// distance), so that `prdo` is one edit from `prod`, as a typist sees it.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Rows i - 2, i - 1 and i of the table.
    let mut before: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 0..a.len() {
        let mut cur = vec![i + 1];
        for j in 0..b.len() {
            let mut d = (prev[j] + usize::from(a[i] != b[j]))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
            if i > 0 && j > 0 && a[i] == b[j - 1] && a[i - 1] == b[j] {
                d = d.min(before[j - 1] + 1);
            }
            cur.push(d);
        }
        before = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}

/// Whether `candidate` is close enough to the different word `written` to be suggested as
/// "did you mean": at most one edit per three characters (at least one), and fewer edits than
/// `written` has characters. The one rule behind every "did you mean" (names and keywords).
pub(crate) fn is_similar(written: &str, candidate: &str) -> bool {
    let (len, clen) = (written.chars().count(), candidate.chars().count());
    // Words of very different lengths are never within the distance below; the bound keeps
    // the quadratic distance off hostile, very long names.
    if len > 2 * clen + 2 || clen > 2 * len + 2 {
        return false;
    }
    let d = edit_distance(written, candidate);
    d <= (len / 3).max(1) && d < len
}

macro_rules! codes {
    ($( $variant:ident = $code:literal, $sev:ident, $title:literal, $explain:literal; )*) => {
        /// Every diagnostic TeIL can emit. The string form (`E0302`) is stable: tools that use
        /// TeIL as a guard may match on it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $( $variant, )*
        }

        impl Code {
            pub const ALL: &'static [Code] = &[$( Code::$variant, )*];

            pub fn as_str(self) -> &'static str {
                match self { $( Code::$variant => $code, )* }
            }

            pub fn severity(self) -> Severity {
                match self { $( Code::$variant => Severity::$sev, )* }
            }

            /// A one-line summary.
            pub fn title(self) -> &'static str {
                match self { $( Code::$variant => $title, )* }
            }

            /// The long explanation printed by `teil explain`.
            pub fn explanation(self) -> &'static str {
                match self { $( Code::$variant => $explain, )* }
            }
        }
    };
}

codes! {
    Syntax = "E0001", Error, "syntax error",
"The text does not follow TeIL's grammar (spec/grammar.md). The parser reports every syntax
error in a file: after an error it skips to the start of the next declaration or statement.

A declaration is `alloc x : [2, 3]` or `var x : [2 3]`; a statement is `x = e`. Operands of
prefix operations are atoms (a name, a number, or a parenthesised expression), so

    C = add A transp 1 2 B      // error: `transp` cannot start an operand

must be written `C = add A (transp 1 2 B)`.

A misspelled keyword is read as a variable name, so the error is found just after it; the
report then suggests the keyword (did you mean `contr`?). Assignment is written `=`, never
`:=`, `<-` or `==`.

While a file has a syntax error, the warnings W0001 and W0003 are not reported: the statement
that does not parse is missing from the program they reason about.";

    InvalidChar = "E0002", Error, "invalid character",
"A character that cannot start any TeIL token. Identifiers are ASCII letters, digits and `_`
(not starting with a digit); comments start with `//`. A run of the same character (`@@@@`,
with or without whitespace between) is reported once.";

    NumberTooLarge = "E0003", Error, "number too large",
"An extent, dimension position or slice index does not fit in 64 bits. Such a number can
never describe a real tensor.

    alloc A : [99999999999999999999]   // error";

    LiteralNotFinite = "E0004", Error, "numeric literal is not finite",
"A numeric literal is too large to be represented as a 64-bit float (it would round to
infinity). TeIL literals must be finite.

    x = 1e400 * A   // error";

    TooDeep = "E0005", Error, "expression nested too deeply",
"A statement's right-hand side is nested more deeply than the implementation limit (see
spec/limits.md). The limit exists so that no input can exhaust the stack of the checker, the
interpreters or the code generator. Split the expression into several statements over
temporary variables.";

    DeclAfterStmt = "E0006", Error, "declaration after a statement",
"Both papers define a program as a sequence of declarations followed by a sequence of
statements. Move the declaration above the first statement.

    alloc A : [2]
    A = A
    alloc B : [2]   // error: declarations come first";

    DuplicateQualifier = "E0007", Error, "qualifier given twice",
"A declaration carries at most one of `input`, `output` and `inout`, written before the keyword
or right after `var`/`alloc`. Use `inout` for a variable that is both read and written.

    input var output A : [3]   // error";

    Redeclared = "E0101", Error, "variable declared twice",
"Rule S-Var: a name may be declared only once (the store has one allocation per name).

    alloc A : [2]
    alloc A : [3]   // error";

    ZeroExtent = "E0102", Error, "extent must be at least 1",
"Tensor types are lists of natural numbers starting from 1: dimensions cannot be empty
(TeIL paper §3.1, report Definition 2). A scalar is declared with the empty type `[]`.

    alloc A : [3, 0]   // error";

    DeclTooLarge = "E0103", Error, "tensor too large",
"The number of elements of a declared tensor (the product of its extents) is over 2^63 - 1, so
its indices would not fit signed 64-bit arithmetic (spec/limits.md). Whether a tensor can be
allocated is not the checker's question: a large declaration checks, and a run that cannot
allocate it is refused with E0701.

    alloc A : [4294967296, 2147483648]   // error: 2^63 elements";

    DeclRankTooLarge = "E0104", Error, "rank too large",
"A declared tensor has more dimensions than the implementation limit of 32 (spec/limits.md).";

    AssignUndeclared = "E0201", Error, "assignment to an undeclared variable",
"Rule OK-Stmt requires the assigned variable to be declared (x ∈ dom(Γ)).

    alloc A : [2]
    B = A   // error: B is not declared";

    AssignMismatch = "E0202", Error, "assigned expression has the wrong shape",
"Rule OK-Stmt requires the type of the right-hand side to equal the declared type of the
assigned variable. TeIL never broadcasts implicitly: use `expa`, `proj`, a reduction or a
contraction to change the shape.

    alloc A : [2, 3]
    alloc B : [3, 2]
    A = B   // error: [3, 2] is not [2, 3]; perhaps `A = B ^[1 2]`";

    AssignElemMismatch = "E0203", Error, "assigned expression has the wrong element type",
"OK-Stmt requires the right-hand side of `x = e` to have exactly the element type declared for
`x` (spec/typing.md, \"Element types\"): `f64` (the default) or `f32`. TeIL never converts
implicitly; write the conversion:

    input alloc A : f32[3]
    output alloc B : [3]
    B = f64 (exp A)       // not `B = exp A`

A literal alone takes the target's element type, so `B = 2.5` needs no conversion.";

    UndeclaredVar = "E0301", Error, "use of an undeclared variable",
"Rule T-Var: a variable can only be read if it is declared.

    alloc A : [2]
    A = add A Z   // error: Z is not declared";

    ElementwiseMismatch = "E0302", Error, "operand shapes differ",
"Element-wise arithmetic (T-Add, T-Mul, T-Elem) needs both operands to have the same shape.
Multiplication also accepts a scalar on the left (T-SMul) and division a scalar on the right
(T-SDiv); nothing else is broadcast.

    alloc A : [2, 3]
    alloc B : [3, 2]
    A = A + B      // error: [2, 3] and [3, 2]
    A = A * 2      // error: the scalar goes on the left: 2 * A";

    PositionOutOfRange = "E0303", Error, "dimension position out of range",
"Positions are 1-based and must name a dimension of the operand: 1 <= i <= rank. This applies
to red+/red*/redmax/redmin (T-Red), transp and ^[ ] (T-Transp), diag (T-Diag), contr and .[ ]
(T-Contr) and proj (T-Proj).

    alloc A : [2, 3]
    alloc s : [2]
    s = red+ 3 A   // error: A has rank 2";

    PositionsNotDistinct = "E0304", Error, "positions must be distinct",
"A diagonal or a contraction pairs two different dimensions (T-Diag, T-Contr).

    alloc A : [3, 3]
    alloc s : [3]
    s = diag 1 1 A   // error";

    ExtentsDiffer = "E0305", Error, "paired dimensions have different extents",
"A diagonal or a contraction walks two dimensions in lock-step, so their extents must be equal
(premise n_i0 = n_i1 of T-Diag, d_m = d_n of T-Contr). This is the check that rejects the
TVM kernel of the TeIL paper's Figure 3a.

    alloc A : [4, 6]
    alloc B : [5, 6]
    alloc C : [4, 5]
    C = contr 1 3 (prod A B)   // error: extents 4 and 5

The help names the pair of equal extents nearest to the one written with which the whole
right-hand side gets the target's shape (here `contr 2 4`, giving [4, 5]), so following it
does not lead to E0202; when no pair does, it says so.";

    SliceOutOfRange = "E0306", Error, "projection slice out of range",
"`proj i m e` selects slice m of dimension i, so 1 <= m <= n_i (premise of T-Proj).

    alloc B : [2, 3]
    alloc C : [3]
    C = proj 1 5 B   // error: dimension 1 has extent 2";

    ExpaPositionOutOfRange = "E0307", Error, "expansion position out of range",
"`expa i n e` inserts a new dimension before position i, so 1 <= i <= rank + 1 (T-Expa).

    alloc A : [2]
    alloc B : [2, 3]
    B = expa 4 3 A   // error: A has rank 1, so i is at most 2";

    ExpaZeroExtent = "E0308", Error, "expansion extent must be at least 1",
"`expa i n e` adds a dimension of extent n, and dimensions cannot be empty.

    alloc A : [2]
    A = proj 1 1 (expa 1 0 A)   // error";

    ExprTooLarge = "E0309", Error, "expression shape too large",
"An intermediate expression (typically a tensor product) has more elements than fit in 64
bits. Even if no evaluator materialises it, its index space must be addressable. Contract
earlier, before forming the product.";

    ExprRankTooLarge = "E0310", Error, "expression rank too large",
"An intermediate expression has more than 32 dimensions (spec/limits.md).";

    ElemMismatch = "E0311", Error, "operands have different element types",
"The two operands of an element-wise operation (`+ - * /`, `max`, `min`) or of a tensor product
must have the same element type (T-Add, T-Mul, T-Elem, T-Prod, T-Func2; spec/typing.md, \"Element
types\"). TeIL never converts implicitly, because where a conversion happens decides every
rounding after it. Convert one operand explicitly:

    input alloc A : f32[3]
    input alloc B : [3]
    output alloc C : f32[3]
    C = A + f32 B          // not `A + B`

`f32 e` rounds each element to nearest, ties to even (±∞ beyond binary32's range); `f64 e` is
exact. A literal takes the element type of the other operand, so `2 * A` is fine.";

    ConvertSame = "E0312", Error, "conversion to the operand's own element type",
"`f32 e` converts an `f64` operand to binary32 and `f64 e` an `f32` operand to binary64
(T-Conv); a conversion whose operand already has the target element type converts nothing and
is rejected, so that every conversion in a program is one that rounds or widens:

    input alloc A : f32[3]
    output alloc B : f32[3]
    B = f32 A              // E0312: remove the conversion

A literal under a conversion takes the other element type: `f32 0.1` rounds the binary64 value
of 0.1 to binary32 (write `0.1` alone where an f32 is wanted to round the decimal once).";

    LiteralF32Range = "E0313", Error, "literal out of range for f32",
"A literal used where the context needs an `f32` is its decimal value rounded once to binary32
(T-Lit). A value of magnitude at least 3.40282357e38 (the largest finite binary32,
3.4028235e38, plus half an ulp) rounds to infinity, which a literal may not denote (as E0004
for binary64):

    output alloc x : f32[]
    x = 1e39               // E0313

Literals too small for binary32 round to zero or a subnormal, as in IEEE 754.";

    UninitializedRead = "W0001", Warning, "read of a variable that may be uninitialized",
"In a program that uses qualifiers (report §5), a variable that is neither `input` nor `inout`
starts out undefined. Reading it before a statement assigns it yields undefined values, which
propagate through arithmetic.

    input alloc A : [2]
    output alloc B : [2]
    alloc T : [2]
    B = add A T   // warning: T is read but never assigned";

    TranspSame = "W0002", Warning, "transposition of a dimension with itself",
"`transp i i e` (or `e ^[i i]`) exchanges a dimension with itself and has no effect.";

    OutputNeverAssigned = "W0003", Warning, "output is never assigned",
"A variable declared `output` is never assigned by any statement, so the caller receives
undefined values.

    input alloc A : [2]
    output alloc B : [2]   // warning";

    // Guard front ends (spec/frontends.md): E04xx einsum, E05xx/W05xx index notation.

    EinsumSyntax = "E0401", Error, "malformed einsum equation",
"An einsum equation is a comma-separated list of subscript terms, optionally followed by `->`
and the output term. Subscripts are letters (any Unicode letter, as opt_einsum accepts); `...`
(exactly three dots, at most once per term) stands for the dimensions not named by letters.
Spaces are ignored. The invalid characters of an equation make one E0401 between them.

    teil einsum 'ij,j$->i' --shapes '[[2,3],[3]]'   // error: `$` is not a subscript
    teil einsum 'ij->i->j' --shapes '[[2,3]]'       // error: `->` given twice";

    EinsumOperandCount = "E0402", Error, "wrong number of shapes",
"`--shapes` gives one shape per operand of the equation, in order.

    teil einsum 'ij,jk->ik' --shapes '[[2,3]]'   // error: 2 operands, 1 shape";

    EinsumRankMismatch = "E0403", Error, "subscripts do not match the operand's rank",
"Each operand has one subscript per dimension, or fewer and a `...` that covers the rest.

    teil einsum 'ij->i' --shapes '[[2,3,4]]'   // error: 2 subscripts, 3 dimensions
    teil einsum '...ij->i...' --shapes '[[2,3,4]]'   // fine: `...` covers [2]";

    EinsumExtentConflict = "E0404", Error, "index bound to different extents",
"Every occurrence of a subscript letter ranges over one index, so the dimensions it labels must
have equal extents, except that, as in NumPy, an extent of 1 in one operand broadcasts against
the letter's extent in the others. Inside one operand (a diagonal) the extents must be equal.

    teil einsum 'ij,jk->ik' --shapes '[[2,3],[4,5]]'   // error: `j` is 3 and 4
    teil einsum 'ij,j->i' --shapes '[[2,3],[1]]'       // fine: `j` of extent 1 broadcasts";

    EinsumOutputUnknown = "E0405", Error, "output index does not occur in the inputs",
"An output subscript names a dimension of the result; its extent comes from an operand, so it
must occur in some operand.

    teil einsum 'ij->iz' --shapes '[[2,3]]'   // error: `z` is in no operand";

    EinsumOutputRepeated = "E0406", Error, "index repeated in the output",
"Each output subscript names one dimension of the result. To take a diagonal, repeat the index
in an operand instead (`ii->i`).

    teil einsum 'ij->ii' --shapes '[[2,2]]'   // error";

    EinsumBroadcast = "E0407", Error, "broadcast dimensions do not fit",
"The dimensions under `...` are aligned from the right across operands, as NumPy broadcasts:
at each position the extents must be equal or 1 (an extent of 1 is stretched). When the
operands' `...` cover any dimension, an explicit output must contain `...` too.

    teil einsum '...i,...i->...i' --shapes '[[2,3],[4,3]]'   // error: 2 and 4
    teil einsum '...i->i' --shapes '[[2,3]]'   // error: the output lacks `...`";

    ShapesSyntax = "E0408", Error, "malformed shape list",
"`--shapes` is a JSON array of arrays of natural numbers, one array per operand; a scalar
operand has the shape `[]`.

    teil einsum ',ij->ij' --shapes '[[],[2,3]]'   // fine
    teil einsum 'ij->ji' --shapes '[2,3]'         // error: not an array of arrays";

    EinsumTooManyOperands = "E0409", Error, "too many einsum operands",
"An einsum equation may have at most 64 operands (spec/limits.md), so that choosing the order
of the pairwise contractions stays fast. Split the computation into several equations.";

    TinSyntax = "E0501", Error, "index-notation syntax error",
"A `.tin` file holds TeIL declarations followed by statements `T(i, j) = e` or `T(i) += e`,
where `e` is built from accesses `B(i, k)`, scalars `s`, numbers, `+ - * /` and parentheses
(spec/frontends.md).

    alloc A : [3]
    alloc B : [3]
    A(i) = B(i) +      // error: the expression is incomplete";

    TinRankMismatch = "E0502", Error, "wrong number of indices",
"A tensor is indexed with exactly one index variable per dimension; a scalar is written without
indices (`s` or `s()`).

    alloc A : [3]
    alloc B : [3, 4]
    A(i) = B(i)   // error: `B` has rank 2";

    TinExtentConflict = "E0503", Error, "index ranges over dimensions of different extents",
"An index variable ranges over one set of values, so every dimension it indexes must have the
same extent. This is the check that rejects the TVM kernel of the TeIL paper's Fig. 3a, where
the declarations of `A` and `B` list their extents the wrong way round:

    alloc A : [4, 6]
    alloc B : [5, 6]
    alloc C : [4, 5]
    C(y, x) = A(k, y) * B(k, x)   // error: `k` is 4 in `A` and 5 in `B`";

    TinRepeatedIndex = "E0504", Error, "index repeated on the left-hand side",
"Each index on the left-hand side names one dimension of the target. Assigning only the
diagonal of a tensor is not expressible in TeIL.

    alloc A : [3, 3]
    alloc B : [3]
    A(i, i) = B(i)   // error";

    TinCompoundAssign = "E0505", Error, "unsupported compound assignment",
"Only `=` and `+=` assign. Frameworks disagree on what `*=` means when the right-hand side has
summed indices (Tensor Comprehensions reads it as a product reduction), so write the update out.

    alloc A : [3]
    alloc B : [3]
    A(i) *= B(i)   // error: write `A(i) = A(i) * B(i)`";

    TinPartialSum = "W0501", Warning, "summed index missing from a term",
"An index on the right-hand side that is not on the left is summed over the whole right-hand
side. A term that does not mention it is therefore counted once per value of the index, i.e.
multiplied by its extent. Frameworks disagree here (some sum each term over its own indices),
so the case is flagged.

    alloc A : [3]
    alloc B : [3, 4]
    alloc C : [3]
    A(i) = B(i, k) + C(i)   // warning: means sum_k B(i, k) + 4 * C(i)";

    // The caller boundary (`teil::interface`): E06xx, reported by every surface that takes
    // inputs (`teil run`, the Python package, `SharedKernel::call`, the evaluators).

    UnknownVariable = "E0601", Error, "no such variable",
"A value was given for a name that no declaration of the program has (`teil run --in
NAME=FILE`, a keyword or dictionary key in Python). Check the spelling against the program's
declarations; `teil check` lists none of the inputs' names, but the program's `input` and
`inout` declarations are the names it takes.";

    NotAnInput = "E0602", Error, "not an input",
"A value was given for a variable the caller does not supply: in a program with qualifiers only
`input` and `inout` variables take a value (spec/interpreter.md, \"Inputs\"); `output` and
unqualified variables are the program's own. Give the value to an input, or declare the
variable `inout`.

    input  alloc A : [2]
    output alloc B : [2]   // `--in B=b.npy` is E0602
    B = A + A";

    InputShape = "E0603", Error, "input shape differs from the declaration",
"A value's shape is not the shape its variable is declared with. TeIL checks every shape
statically, so the caller's arrays must match the declarations exactly: no broadcasting, no
reshaping. The message gives both shapes.";

    MissingInput = "E0604", Error, "missing input",
"An input the program needs was not given: every `input` and `inout` variable, and in a
program without qualifiers every variable read before it is assigned. Give it (`--in
NAME=FILE.npy`, a keyword argument in Python), or let `teil run --random-inputs SEED` draw every
input.";

    InputElemType = "E0605", Error, "input element type differs from the declaration",
"A variable declared `f32` takes binary32 data: a float32 `.npy` file (`--in A=a.npy`), a
float32 NumPy array in Python, or, through the Rust API's binary64 arrays, numbers that are
binary32 values exactly. A float64 file or array, or a number that binary32 cannot hold, is
refused rather than rounded silently: convert it where you can see it, e.g.

    np.save(\"a.npy\", a.astype(np.float32))

or declare the variable `f64` and convert inside the program with `f32 A`. A variable
declared `f64` (or bare `[...]`) takes float64 data, as always.";

    // Evaluation (spec/limits.md, "Evaluation budgets"): E07xx, reported by `teil run`,
    // `teil trace` and `teil fuzz --replay` for a program that checks.

    MemoryBudget = "E0701", Error, "memory budget exceeded",
"The evaluator's estimate of the memory a run needs (the inputs, every declared variable, and
the largest values it materialises; spec/limits.md) is over the memory budget, so the run is
refused before anything is allocated. The budget defaults to half of the machine's memory (and
at most half of the process's address-space limit); raise it with `--max-memory BYTES`
(suffixes K, M, G, T), or shrink the program's tensors.

    var u : [200 300 400 500 600]   // checks; 58 TB of doubles cannot be evaluated
    var v : [200 500 400 300 600]
    v = u ^ [2 4]";

    WorkBudget = "E0702", Error, "work budget exceeded",
"The reference interpreter (`teil run --backend oracle`, the values of `teil trace`, `teil fuzz
--replay`) evaluates every cell pointwise without sharing, so nested reductions multiply its
work: `red+ 1 (expa 1 1000 e)` evaluates `e` 1000 times per cell. Its number of evaluation
steps is computed from the shapes before it starts; above the work budget (default 10^8
steps, a few seconds of work) the run is refused. Use the fast evaluator (`teil run` without
`--backend oracle`), which shares sub-results, or raise the budget with `--max-work STEPS`.";

    OutOfMemory = "E0703", Error, "out of memory",
"An allocation failed although the run's estimate was within the memory budget: the process
has less memory than the budget assumed (an address-space limit, other processes). The run
stops with this error instead of aborting; lower `--max-memory` to be refused up front.";

    Interrupted = "E0704", Error, "evaluation interrupted",
"The evaluation was cancelled by its caller (the cancellation flag of the evaluation budget,
which the Python binding sets on Ctrl-C). The evaluators poll it per statement and every
65,536 steps.";

    OutputBudget = "E0705", Error, "trace output budget exceeded",
"`teil trace` prints one line per expression node of the traced statement; a statement so
large that the trace would print more than the output budget (default 16 MiB) is refused.
Raise it with `--max-output BYTES`, or trace a smaller statement. (Expanded sums with more
than 1,000 store reads are never printed; only their value is shown.)";

    CTooLarge = "E0706", Error, "tensor too large for the C backend",
"Every buffer of the C backend (a variable or a temporary, padded to the `--pad` multiple) and
its workspace is one C object of doubles, 8 bytes each, and a C object's size in bytes must fit
`ptrdiff_t`, a signed 64-bit type (at most 2^63 - 1 bytes): pointer arithmetic within it is
defined only then, and `malloc` refuses more. So each may have at most 2^60 - 1 elements. The
checker accepts index spaces up to 2^63 - 1 elements (spec/limits.md); `teil emit-c` and
`teil run --backend c` refuse larger buffers with this error. (`teil run` refuses a program
whose memory estimate is over the budget first, with E0701.)";

    ProcessTimedOut = "E0801", Error, "the C compiler or the compiled kernel timed out",
"`teil run --backend c` and `teil fuzz` run the C compiler and then the compiled kernel's driver
as separate processes, each bounded by `--cc-timeout SECONDS` (default 300). One of them did not
finish in time; the message names which. It was stopped together with every process it had
started, and its temporary directory was removed.

A compiler that hangs is a problem of the environment (a wrapper waiting for a lock or a
licence, a network file system). A driver that hangs runs a kernel that does not terminate or
is far slower than expected; in `teil fuzz` that is a finding, reported as a mismatch of the C
backend (spec/fuzzing.md). Raise the bound for very large kernels or slow sanitizer builds:

    teil run big.teil --random-inputs 1 --backend c --cc-timeout 1200";

    CUnsupported = "E0802", Error, "not supported by the C backend (no longer reported)",
"Reported by earlier versions of TeIL for a program the C backend could not compile yet: a
variable declared `f32`, an element-wise function (`exp`, `log`, `sqrt`, `tanh`, `erf`, `abs`,
`max`, `min`) or a conversion (`f32 e`, `f64 e`). The C backend now compiles every construct
with the oracle's bits (binary32 arithmetic as C `float`, CORE-MATH's correctly rounded
functions; spec/abi.md), so no program gets this code; it stays reserved so that its number
keeps its meaning.";
}

impl Code {
    /// What `teil explain CODE` prints (and Python's `teil.explain`): `CODE: title`, a blank
    /// line, the long explanation.
    pub fn explain(self) -> String {
        format!(
            "{}: {}\n\n{}",
            self.as_str(),
            self.title(),
            self.explanation()
        )
    }

    /// Parses a code as `teil explain` receives it (`E0302`, case-insensitive).
    pub fn parse(s: &str) -> Option<Code> {
        let s = s.trim();
        Code::ALL
            .iter()
            .copied()
            .find(|c| c.as_str().eq_ignore_ascii_case(s))
    }
}

/// An operational error (a caller's inputs, a budget, the C backend, its processes) that may
/// carry a diagnostic code. Every surface renders it the same way, through [`Self::coded`]:
/// `[E0701] message` (the CLI prefixes `error: `; Python raises it as the exception's text; the
/// playground shows it), or the message alone when it has no code. Messages name no
/// command-line flag; a surface adds its own hints after them.
pub trait CodedError: std::fmt::Display {
    /// The stable diagnostic code, for errors that have one (`teil explain CODE`).
    fn code(&self) -> Option<Code>;

    /// Every code the error reports, in order: its [`Self::code`], or, for an error that lists
    /// several problems each with its code on its own line, theirs (Python's `RunError.codes`).
    fn codes(&self) -> Vec<Code> {
        self.code().into_iter().collect()
    }

    /// The message with its code in front.
    fn coded(&self) -> String {
        with_code(self.code(), &self)
    }
}

/// A number of bytes for messages: `1.5 GiB`, `512 bytes` (the evaluators' budgets, files read).
pub struct Bytes(pub u64);

impl std::fmt::Display for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
        let n = self.0;
        if n < 1024 {
            return write!(f, "{n} bytes");
        }
        let mut v = n as f64 / 1024.0;
        let mut u = 0;
        while v >= 1024.0 && u + 1 < UNITS.len() {
            v /= 1024.0;
            u += 1;
        }
        write!(f, "{v:.1} {}", UNITS[u])
    }
}

/// `[E0701] message`, or the message alone without a code: the one spelling of a coded
/// operational message ([`CodedError::coded`], and the CLI's messages that are not errors of a
/// type).
pub fn with_code(code: Option<Code>, message: &dyn std::fmt::Display) -> String {
    match code {
        Some(c) => format!("[{}] {message}", c.as_str()),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{edit_distance, is_similar};

    #[test]
    fn an_adjacent_transposition_is_one_edit() {
        assert_eq!(edit_distance("prdo", "prod"), 1);
        assert_eq!(edit_distance("cnotr", "contr"), 1);
        assert_eq!(edit_distance("abc", "abc"), 0);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        // Only neighbours are transposed in one edit.
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("abc", "cba"), 2);
        assert!(is_similar("prdo", "prod"));
    }
}
