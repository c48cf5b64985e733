//! Test support for the scheduling passes: one pass applied to every statement of a small
//! program, the assignments' text before and after, and the values of the kernels emitted
//! without and with the rewrite, compiled and run side by side.

use crate::ir::{Kernel, Role};
use crate::lower::{self, Item, Schedule};
use crate::run::{run_batch, Job, Toolchain};
use crate::Options;
use ndarray::{ArrayD, IxDyn};
use std::collections::BTreeMap;

/// What a pass did to a program.
pub(crate) struct Rewritten {
    /// The assignments before the pass.
    pub before: String,
    /// The assignments after the pass ran on every statement (not on the temporaries it made).
    pub after: String,
    pub plain: Kernel,
    pub rewritten: Kernel,
}

/// Runs `pass` on every statement of `src`, lowered with the padding multiple `pad`.
pub(crate) fn rewrite(src: &str, pad: u64, pass: &mut Schedule<'_>) -> Rewritten {
    let (p, _) = teil::compile(src).unwrap_or_else(|d| panic!("does not check: {d:?}"));
    let opts = Options {
        pad,
        ..Options::default()
    };
    let plain = lower::assignments(&p, &opts).expect("lowers");
    let before = plain.to_string();
    let mut asg = lower::assignments(&p, &opts).expect("lowers");
    for item in &mut asg.items {
        if let Item::Assign(a) = item {
            pass(&mut asg.cx, a).expect("the pass runs");
        }
    }
    let after = asg.to_string();
    let mut rewritten = lower::assignments(&p, &opts)
        .expect("lowers")
        .emit(pass)
        .expect("emits");
    // Both kernels go into one translation unit.
    rewritten.name = "rewritten".to_string();
    Rewritten {
        before,
        after,
        plain: plain.emit(&mut |_, _| Ok(())).expect("emits"),
        rewritten,
    }
}

impl Rewritten {
    /// Compiles both kernels into one driver, runs them on the same inputs and asserts that
    /// every parameter ends bit for bit equal, with zero padding. `integers`: inputs are small
    /// integers (every sum and product then exact whatever the association, for passes that
    /// reassociate); otherwise fractions with rounding in every operation.
    pub fn assert_same_values(&self, integers: bool) {
        let mut inputs = BTreeMap::new();
        let mut seed = 0x9e37_79b9_u64;
        for b in &self.plain.buffers {
            let (Role::Param { input: true, .. }, Some(var)) = (b.role, &b.var) else {
                continue;
            };
            let shape: Vec<usize> = b.logical.iter().map(|&n| n as usize).collect();
            let a = ArrayD::from_shape_fn(IxDyn(&shape), |_| {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let r = (seed >> 33) % 7;
                if integers {
                    r as f64 - 3.0
                } else {
                    (r as f64 - 3.0) / 3.0 + 0.1
                }
            });
            inputs.insert(var.clone(), a);
        }
        let tc = Toolchain::default().with_cflags("-std=c99 -O2 -Wall -Wextra -Werror -pedantic");
        let jobs = [0, 1].map(|kernel| Job {
            kernel,
            inputs: inputs.clone(),
        });
        let out = run_batch(&tc, &[&self.plain, &self.rewritten], &jobs).expect("runs");
        for o in &out {
            assert!(o.nonzero_padding.is_empty(), "{:?}", o.nonzero_padding);
        }
        let bits = |m: &BTreeMap<String, ArrayD<f64>>| -> BTreeMap<String, Vec<u64>> {
            m.iter()
                .map(|(k, v)| (k.clone(), v.iter().map(|x| x.to_bits()).collect()))
                .collect()
        };
        assert_eq!(bits(&out[0].values), bits(&out[1].values));
        assert!(!out[0].values.is_empty());
    }
}
