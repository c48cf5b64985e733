//! A checked program as a caller sees it, beyond what [`CheckedProgram`] answers itself
//! (`is_input`, `is_required`, `output_names`): the names of the inputs, how a cell is
//! addressed, and which syntax to show the program in. `teil run`, `teil trace` and the Python
//! binding ask these functions instead of deciding for themselves (spec/interpreter.md).

use crate::check::CheckedProgram;
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

/// The syntax a program is written in, for showing its expressions back to its author: infix
/// when the text uses the report's `var` declarations, prefix otherwise.
pub fn written_style(text: &str) -> Style {
    if text.split_whitespace().any(|w| w == "var") {
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
        let req = p
            .program()
            .decls
            .iter()
            .filter(|d| p.is_required(d))
            .map(|d| d.name.name.clone())
            .collect();
        (input_names(&p), p.output_names(), req)
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
