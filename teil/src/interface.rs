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
