//! The README's "From Rust" example, verbatim (the test `readme_example_is_from_rust` in
//! tests/shared.rs keeps them equal): check a program, run it with the fast evaluator, call its
//! C kernel in-process, guard an einsum.

use std::collections::BTreeMap;
use teil_cbackend::shared::{SharedKernel, SharedOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let src = "input var A : [2 3]\ninput var B : [3 2]\noutput var C : [2 2]\nC = (A # B) .[2 3]";
    // Every diagnostic, with its code, rule and span, when the program is ill-typed.
    let (program, _warnings) = teil::compile(src).map_err(|diags| {
        let reports: Vec<String> = diags
            .iter()
            .map(|d| teil::render::render_text(d, "kernel.teil", src, false))
            .collect();
        reports.concat()
    })?;

    let a = ndarray::array![[1., 2., 3.], [4., 5., 6.]].into_dyn();
    let b = ndarray::array![[1., 0.], [0., 1.], [1., 1.]].into_dyn();
    let inputs = BTreeMap::from([("A".to_string(), a.clone()), ("B".to_string(), b.clone())]);
    let values = teil_interp::run_fast(&program, &inputs)?; // every variable's final value
    println!("{}", values["C"]); // [[4, 5], [10, 11]]

    // The C backend compiled once with `cc` into ~/.cache/teil (TEIL_CACHE_DIR overrides),
    // loaded into the process, and called without spawning anything.
    let kernel = SharedKernel::compile(
        &program,
        &SharedOptions {
            pad: 4,
            ..Default::default()
        },
    )?;
    let views = BTreeMap::from([("A".to_string(), a.view()), ("B".to_string(), b.view())]);
    assert_eq!(kernel.call(&views)?["C"], values["C"]);

    // The einsum guard: the shapes alone decide; diagnostics point into the equation.
    let err = teil::guard::einsum("ij,jk->ik", &[[2, 3], [4, 4]]).unwrap_err();
    assert_eq!(err[0].code.as_str(), "E0404"); // index `j` bound to 3 and to 4
    Ok(())
}
