//! The caller boundary: a checked program as a caller sees it, beyond what
//! [`CheckedProgram`] answers itself (`is_input`, `is_required`, `output_names`). The names of
//! the inputs and of the required ones, whether the values a caller gives fit the program
//! ([`check_inputs`], [`InterfaceError`]), how a cell is addressed, and which syntax to show
//! the program in. Every surface that takes inputs (the evaluators, `teil run`, the C runner,
//! `SharedKernel::call`, the Python package, the playground) asks these functions and only
//! translates their answer (spec/interpreter.md, "Inputs").

use crate::ast::{ElemType, ShapeDisplay};
use crate::check::CheckedProgram;
use crate::diagnostic::{Code, CodedError};
use crate::fmt::Style;

/// The variables the caller may supply, in declaration order: `input`/`inout`, or every
/// variable when the program has no qualifiers.
pub fn input_names(p: &CheckedProgram) -> Vec<String> {
    p.program()
        .decls
        .iter()
        .filter(|d| p.is_input(d))
        .map(|d| d.name.name.clone())
        .collect()
}

/// The inputs the caller must supply, in declaration order ([`CheckedProgram::is_required`]):
/// every `input`/`inout` variable; without qualifiers, the variables read before they are
/// assigned.
pub fn required_inputs(p: &CheckedProgram) -> Vec<String> {
    p.program()
        .decls
        .iter()
        .filter(|d| p.is_required(d))
        .map(|d| d.name.name.clone())
        .collect()
}

/// Why the values a caller gives do not fit a checked program (spec/diagnostics.md, "Codes of
/// a program's caller"). The one wording of these errors: every surface reports them through
/// this type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InterfaceError {
    /// E0601: no variable of the program has this name.
    #[error("`{name}` is not a variable of the program")]
    UnknownVariable { name: String },
    /// E0602: the variable is declared but the caller does not supply it (not `input` or
    /// `inout` in a program with qualifiers).
    #[error(
        "`{name}` is not an input of the program (only `input` and `inout` variables take a value)"
    )]
    NotAnInput { name: String },
    /// E0603: the value's shape is not the declared one.
    #[error(
        "input `{name}` has shape {}, but the program declares {}",
        ShapeDisplay(found),
        ShapeDisplay(expected)
    )]
    InputShape {
        name: String,
        expected: Vec<u64>,
        found: Vec<u64>,
    },
    /// E0604: a required input ([`required_inputs`]) is not given.
    #[error("missing input `{name}` of shape {}", ShapeDisplay(shape))]
    MissingInput { name: String, shape: Vec<u64> },
    /// E0605: the value given for an `f32` variable holds data of another element type: a
    /// file of `found` (`float64`, ...), or a number that is not a binary32 value (`found` is
    /// `"float64"` and `value` the first such number, at the flat row-major position `at`).
    #[error("{}", elem_message(name, *declared, found, value))]
    InputElemType {
        name: String,
        declared: ElemType,
        found: String,
        /// The flat position of the first value that does not fit, and its bits.
        value: Option<(u64, u64)>,
    },
}

fn elem_message(name: &str, declared: ElemType, found: &str, value: &Option<(u64, u64)>) -> String {
    match value {
        Some((at, v)) => format!(
            "input `{name}` is declared {declared} but element {at} ({:?}) is not an {declared} value",
            f64::from_bits(*v)
        ),
        None => format!("input `{name}` is declared {declared} but holds {found} data"),
    }
}

/// E0605 for the first element of `values` (an `f32` variable's, row-major) that is not a
/// binary32 value; NaN of any payload is one. Values given for `f32` variables as binary64
/// numbers (the Rust API, ndarray's `f64`) must be exactly binary32: nothing at the boundary
/// rounds a caller's number silently.
pub fn check_binary32(
    name: &str,
    values: impl IntoIterator<Item = f64>,
) -> Result<(), InterfaceError> {
    for (at, v) in values.into_iter().enumerate() {
        if !v.is_nan() && ElemType::F32.round(v).to_bits() != v.to_bits() {
            return Err(InterfaceError::InputElemType {
                name: name.to_string(),
                declared: ElemType::F32,
                found: "float64".to_string(),
                value: Some((at as u64, v.to_bits())),
            });
        }
    }
    Ok(())
}

impl CodedError for InterfaceError {
    fn code(&self) -> Option<Code> {
        Some(match self {
            InterfaceError::UnknownVariable { .. } => Code::UnknownVariable,
            InterfaceError::NotAnInput { .. } => Code::NotAnInput,
            InterfaceError::InputShape { .. } => Code::InputShape,
            InterfaceError::MissingInput { .. } => Code::MissingInput,
            InterfaceError::InputElemType { .. } => Code::InputElemType,
        })
    }
}

impl InterfaceError {
    /// The variable the error is about.
    pub fn name(&self) -> &str {
        match self {
            InterfaceError::UnknownVariable { name }
            | InterfaceError::NotAnInput { name }
            | InterfaceError::InputShape { name, .. }
            | InterfaceError::MissingInput { name, .. }
            | InterfaceError::InputElemType { name, .. } => name,
        }
    }
}

/// Interface errors as every surface prints them: one per line, each `[E06xx] message`.
pub struct Coded<'a>(pub &'a [InterfaceError]);

impl std::fmt::Display for Coded<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (k, e) in self.0.iter().enumerate() {
            if k > 0 {
                f.write_str("\n")?;
            }
            f.write_str(&e.coded())?;
        }
        Ok(())
    }
}

/// The declared shape of `name` when a value of shape `found` may initialise it: `name` is a
/// variable of `p` with that shape. This is the evaluators' condition, which lets a caller
/// start any variable (the oracle's reproducers do); the surfaces users call check the stricter
/// [`check_inputs`].
pub fn initial_shape<'p>(
    p: &'p CheckedProgram,
    name: &str,
    found: &[u64],
) -> Result<&'p [u64], InterfaceError> {
    let expected = p
        .var_shape(name)
        .ok_or_else(|| InterfaceError::UnknownVariable {
            name: name.to_string(),
        })?;
    if found != expected {
        return Err(InterfaceError::InputShape {
            name: name.to_string(),
            expected: expected.to_vec(),
            found: found.to_vec(),
        });
    }
    Ok(expected)
}

/// Checks the inputs a caller gives, by name with their shapes (`None` where the value could
/// not be read, so only its name is checked): [`Interface::check`] of `p`'s interface.
pub fn check_inputs<'a, S: AsRef<[u64]>>(
    p: &CheckedProgram,
    given: impl IntoIterator<Item = (&'a str, Option<S>)>,
) -> Result<(), Vec<InterfaceError>> {
    Interface::of(p).check(given)
}

/// What a caller needs to know of a program's variables to give it inputs, kept apart from the
/// program by callers that outlive it (a compiled kernel).
#[derive(Clone, Debug)]
pub struct Interface {
    /// Every declared variable, in declaration order.
    vars: Vec<Var>,
    /// Indices into `vars` by name.
    index: std::collections::HashMap<String, usize>,
}

#[derive(Clone, Debug)]
struct Var {
    name: String,
    shape: Vec<u64>,
    input: bool,
    required: bool,
}

impl Interface {
    pub fn of(p: &CheckedProgram) -> Interface {
        let vars = p
            .program()
            .decls
            .iter()
            .map(|d| Var {
                name: d.name.name.clone(),
                shape: d.shape(),
                input: p.is_input(d),
                required: p.is_required(d),
            })
            .collect::<Vec<_>>();
        let index = vars
            .iter()
            .enumerate()
            .map(|(k, v)| (v.name.clone(), k))
            .collect();
        Interface { vars, index }
    }

    /// Checks the inputs a caller gives: each must be an input ([`input_names`]) with the
    /// declared shape, and every required input ([`required_inputs`]) must be given. Returns
    /// every problem: the given inputs' in the order given, then the missing ones in
    /// declaration order.
    pub fn check<'a, S: AsRef<[u64]>>(
        &self,
        given: impl IntoIterator<Item = (&'a str, Option<S>)>,
    ) -> Result<(), Vec<InterfaceError>> {
        let mut errors = Vec::new();
        let mut names = std::collections::HashSet::new();
        for (name, shape) in given {
            names.insert(name);
            let error = match self.index.get(name).map(|&k| &self.vars[k]) {
                None => Some(InterfaceError::UnknownVariable {
                    name: name.to_string(),
                }),
                Some(v) if !v.input => Some(InterfaceError::NotAnInput {
                    name: name.to_string(),
                }),
                Some(v) => shape
                    .filter(|found| found.as_ref() != v.shape.as_slice())
                    .map(|found| InterfaceError::InputShape {
                        name: name.to_string(),
                        expected: v.shape.clone(),
                        found: found.as_ref().to_vec(),
                    }),
            };
            errors.extend(error);
        }
        for v in &self.vars {
            if v.required && !names.contains(v.name.as_str()) {
                errors.push(InterfaceError::MissingInput {
                    name: v.name.clone(),
                    shape: v.shape.clone(),
                });
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

/// Parses `C[1,2]`, `C[1, 2]`, `C[1 2]`, `s` or `s[]` into a name and a 1-based multi-index.
/// Indices are separated by commas or, without commas, by spaces; an empty index (`C[1,,2]`,
/// `C[1,]`) is an error.
pub fn parse_cell(cell: &str) -> Result<(String, Vec<u64>), String> {
    let usage = || {
        format!("cannot read the cell `{cell}`: write it as `NAME[i, j, ...]` with 1-based indices, or `NAME` for a scalar")
    };
    let cell = cell.trim();
    let (name, rest) = match cell.find('[') {
        Some(at) => (&cell[..at], Some(&cell[at..])),
        None => (cell, None),
    };
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return Err(usage());
    }
    let idx = match rest {
        None => Vec::new(),
        Some(r) => {
            let inner = r
                .strip_prefix('[')
                .and_then(|s| s.strip_suffix(']'))
                .ok_or_else(usage)?;
            let parts: Vec<&str> = if inner.trim().is_empty() {
                Vec::new()
            } else if inner.contains(',') {
                inner.split(',').map(str::trim).collect()
            } else {
                inner.split_whitespace().collect()
            };
            parts
                .iter()
                .map(|s| {
                    if s.chars().all(|c| c.is_ascii_digit()) {
                        s.parse::<u64>().map_err(|_| usage())
                    } else {
                        Err(usage())
                    }
                })
                .collect::<Result<Vec<u64>, String>>()?
        }
    };
    Ok((name.to_string(), idx))
}

/// The syntax a program is mostly written in, for showing it back to its author (`teil trace`,
/// the Python package, the playground): infix when its tokens (comments aside) use the
/// report's `var` and operators (`+ - * / # . ^`) more often than the paper's keywords
/// (`alloc`, `add`, ..., `prod`, `contr`, `transp`), prefix otherwise. The constructs only the
/// prefix syntax spells (`red+`, `diag`, `expa`, `proj`) count for neither. This is the
/// language server's rule for formatting a document in the style it is written in.
pub fn written_style(text: &str) -> Style {
    use crate::lexer::Token;
    let (tokens, _) = crate::lexer::lex(text);
    let score: i64 = tokens
        .iter()
        .map(|(t, _)| match t {
            Token::Var
            | Token::Plus
            | Token::Minus
            | Token::Star
            | Token::Slash
            | Token::Hash
            | Token::Dot
            | Token::Caret => 1,
            Token::Alloc | Token::BinKw(_) | Token::Prod | Token::Contr | Token::Transp => -1,
            _ => 0,
        })
        .sum();
    if score > 0 {
        Style::Infix
    } else {
        Style::Prefix
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(src: &str) -> (Vec<String>, Vec<String>, Vec<String>) {
        let (p, _) = crate::compile(src).expect("well-typed");
        (input_names(&p), p.output_names(), required_inputs(&p))
    }

    #[test]
    fn inputs_are_checked_in_one_place() {
        let (p, _) = crate::compile(
            "input alloc A : [2, 3]\ninput alloc B : [3]\noutput alloc C : [2]\n\
             C = red+ 2 (A * expa 1 2 B)",
        )
        .expect("well-typed");
        let given = |list: &[(&'static str, Option<Vec<u64>>)]| {
            check_inputs(&p, list.iter().map(|(n, s)| (*n, s.clone())))
        };
        assert_eq!(
            given(&[("A", Some(vec![2, 3])), ("B", Some(vec![3]))]),
            Ok(())
        );
        let errors = given(&[
            ("Q", Some(vec![1])),
            ("C", Some(vec![2])),
            ("A", Some(vec![3, 2])),
        ])
        .unwrap_err();
        let codes: Vec<&str> = errors
            .iter()
            .filter_map(|e| e.code())
            .map(Code::as_str)
            .collect();
        assert_eq!(codes, ["E0601", "E0602", "E0603", "E0604"]);
        assert_eq!(
            errors[2].to_string(),
            "input `A` has shape [3, 2], but the program declares [2, 3]"
        );
        assert_eq!(errors[3].to_string(), "missing input `B` of shape [3]");
        assert_eq!(
            Coded(&errors[..2]).to_string(),
            "[E0601] `Q` is not a variable of the program\n[E0602] `C` is not an input of the \
             program (only `input` and `inout` variables take a value)"
        );
        // A value that could not be read is given: only its name is checked.
        assert_eq!(given(&[("A", None), ("B", Some(vec![3]))]), Ok(()));
        // The evaluators' condition: any declared variable, with its shape.
        assert_eq!(initial_shape(&p, "C", &[2]), Ok(&[2][..]));
        let e = initial_shape(&p, "C", &[3]).unwrap_err();
        assert_eq!(e.code(), Some(Code::InputShape));
    }

    #[test]
    fn cells() {
        assert_eq!(parse_cell("C[1, 2]"), Ok(("C".to_string(), vec![1, 2])));
        assert_eq!(parse_cell(" s "), Ok(("s".to_string(), vec![])));
        assert_eq!(parse_cell("s[]"), Ok(("s".to_string(), vec![])));
        assert!(parse_cell("C[1,").is_err());
        assert!(parse_cell("[1]").is_err());
        assert!(parse_cell("C[-1]").is_err());
        assert_eq!(parse_cell("C[1 2]"), Ok(("C".to_string(), vec![1, 2])));
        assert!(parse_cell("C[1,,2]").is_err());
    }

    #[test]
    fn style_follows_the_declarations() {
        assert_eq!(written_style("var x : [2]"), Style::Infix);
        assert_eq!(written_style("alloc variable : [2]"), Style::Prefix);
        // Comments do not count: the words `var` and `#` below are not tokens.
        let prefix = "// var A : [2]  (A # A)\nalloc A : [2, 2]\nA = transp 1 2 A\n";
        assert_eq!(written_style(prefix), Style::Prefix);
        // Infix operators outnumbering the paper's keywords.
        let infix = "alloc A : [2, 2]\nA = (A + A) ^ [1 2] - A * A\n";
        assert_eq!(written_style(infix), Style::Infix);
        // Constructs both syntaxes spell alike count for neither; a tie is prefix.
        assert_eq!(
            written_style("alloc s : []\ns = red+ 1 (diag 1 2 (A # A))"),
            Style::Prefix
        );
    }

    #[test]
    fn qualified_program() {
        let (i, o, r) = names(
            "input alloc A : [2]\ninout alloc B : [2]\noutput alloc C : [2]\nalloc T : [2]\n\
             T = A\nB = T\nC = B",
        );
        assert_eq!(i, ["A", "B"]);
        assert_eq!(o, ["B", "C"]);
        assert_eq!(r, ["A", "B"]);
    }

    #[test]
    fn unqualified_program_requires_what_is_read_first() {
        let (i, o, r) = names("alloc A : [2]\nalloc B : [2]\nB = A\nA = B");
        assert_eq!(i, ["A", "B"]);
        assert_eq!(o, ["A", "B"]);
        assert_eq!(r, ["A"]);
    }
}
