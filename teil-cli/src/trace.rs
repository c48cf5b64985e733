//! `teil trace FILE C[1,2]`: the unfolding of the semantics at one cell (TeIL paper Fig. 7);
//! the format is documented in spec/interpreter.md.

use crate::run::{compile_source, load_inputs};
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

// Cell addresses and the default syntax of a trace are the library's rules.
pub use teil::interface::parse_cell;

pub fn trace(args: &TraceArgs) -> u8 {
    let (name, idx) = match parse_cell(&args.cell) {
        Ok(c) => c,
        Err(e) => {
            crate::input::fail(&e);
            return 2;
        }
    };
    let (p, src) = match compile_source(&args.file, args.color) {
        Ok(c) => c,
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
        None => teil::interface::written_style(&src.text),
    };
    match teil_interp::trace::trace(&p, &name, &idx, inputs.as_ref(), style, &args.budget) {
        Ok(lines) => {
            let hint = "give --in or --random-inputs to see the values";
            crate::out::print(&teil_interp::trace::render_with_hint(&lines, hint));
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
