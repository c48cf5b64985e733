//! `teil trace FILE C[1,2]`: the unfolding of the semantics at one cell (TeIL paper Fig. 7);
//! the format is documented in spec/interpreter.md.

use crate::run::{compile, load_inputs};
use crate::{Color, FmtSyntax};
use teil::fmt::Style;
use teil_interp::trace::TraceError;
use teil_interp::Budget;

pub struct TraceArgs {
    pub file: String,
    pub cell: String,
    pub inputs: Vec<String>,
    pub random_inputs: Option<u64>,
    pub syntax: Option<FmtSyntax>,
    pub budget: Budget,
    pub color: Color,
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

pub fn trace(args: &TraceArgs) -> u8 {
    let (name, idx) = match parse_cell(&args.cell) {
        Ok(c) => c,
        Err(e) => {
            crate::input::fail(&e);
            return 2;
        }
    };
    let p = match compile(&args.file, args.color) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let inputs = if args.inputs.is_empty() && args.random_inputs.is_none() {
        None
    } else {
        // The values come from the oracle: refuse before the inputs are allocated.
        if let Err(e) = args
            .budget
            .check_memory(&teil_interp::budget::oracle_bytes(&p))
        {
            crate::input::fail(&crate::run::describe(&e));
            return 1;
        }
        match load_inputs(&p, &args.inputs, args.random_inputs) {
            Ok(i) => Some(i),
            Err(f) => return f.report(),
        }
    };
    // Show expressions in the syntax the program is written in unless told otherwise.
    let style = match args.syntax {
        Some(FmtSyntax::Prefix) => Style::Prefix,
        Some(FmtSyntax::Infix) => Style::Infix,
        None => match std::fs::read_to_string(&args.file) {
            Ok(text) if text.split_whitespace().any(|w| w == "var") => Style::Infix,
            _ => Style::Prefix,
        },
    };
    match teil_interp::trace::trace(&p, &name, &idx, inputs.as_ref(), style, &args.budget) {
        Ok(lines) => {
            let width = lines
                .iter()
                .map(|l| l.text.chars().count())
                .max()
                .unwrap_or(0);
            for l in lines {
                let pad = width - l.text.chars().count();
                let line = format!("{}{}  {}", l.text, " ".repeat(pad), l.rule);
                println!("{}", line.trim_end());
            }
            0
        }
        Err(TraceError::Run(e)) => {
            crate::input::fail(&crate::run::describe(&e));
            1
        }
        Err(e) => {
            crate::input::fail(&e.to_string());
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_cell;

    #[test]
    fn cells_are_read_strictly() {
        let ok = |s: &str| parse_cell(s).unwrap();
        assert_eq!(ok("C[1,2]"), ("C".to_string(), vec![1, 2]));
        assert_eq!(ok(" C[ 1 , 2 ] "), ("C".to_string(), vec![1, 2]));
        assert_eq!(ok("C[1 2]"), ("C".to_string(), vec![1, 2]));
        assert_eq!(ok("s"), ("s".to_string(), vec![]));
        assert_eq!(ok("s[]"), ("s".to_string(), vec![]));
        assert_eq!(ok("s[ ]"), ("s".to_string(), vec![]));
        for bad in [
            "C[1,,2]",
            "C[1,]",
            "C[,1]",
            "C[,]",
            "C[1, 2 3]",
            "C[1;2]",
            "C[+1]",
            "C[-1]",
            "C[1",
            "C[1]]",
            "[1]",
            "C D[1]",
            "C[99999999999999999999]",
        ] {
            assert!(parse_cell(bad).is_err(), "{bad} was accepted");
        }
    }
}
