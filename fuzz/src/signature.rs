//! Signatures of findings: what the same bug found twice, in different programs, has in common.
//!
//! A campaign spread over many shards (`teil.campaign`, spec/fuzzing.md *Campaigns on a
//! cluster*) shrinks the same bug once per shard, from different programs. Shrinking ends at a
//! small program, but not at the same one: the variables keep the generator's names, the
//! shapes are what was left of the program it started from (ranks are never reduced), and so
//! are the axes the operations name. A planted `max` that starts from 0, shrunk from 12
//! programs of four shards, ends as `redmax 4 x` on a rank-5 `x`, `redmax 1 x` on a rank-2 one,
//! and so on. A finding's signature is therefore the failing check together with the shrunk
//! program's **skeleton**:
//!
//! - the statements only, in order, each as `vK = e` with the variables renamed `v0`, `v1`, ...
//!   in the order they first appear (the target of a statement before its value);
//! - each expression in prefix form without the numbers operations take (axes, extents,
//!   positions): `redmax(v1)`, `mul(0, proj(v2))`, `prod(v1, v2)`; literals as they are.
//!
//! Declarations (shapes, qualifiers) are left out. The signature is the 64-bit FNV-1a hash of
//! `check`, a newline and the skeleton, as 16 hexadecimal digits. It is a heuristic in both
//! directions: two distinct bugs behind the same operations share a signature (the count says
//! how often; each signature keeps one reproducer), and one bug shrunk to two different
//! skeletons gets two.

use std::collections::HashMap;
use std::fmt::Write;
use teil::ast::{Expr, ExprKind, Program};

/// The skeleton of `program` (see the module documentation): one line per statement.
pub fn skeleton(program: &Program) -> String {
    let mut names = Names::default();
    let mut out = String::new();
    for s in &program.stmts {
        let target = names.rename(&s.target.name);
        let _ = write!(out, "{target} = ");
        expr(&s.value, &mut names, &mut out);
        out.push('\n');
    }
    out
}

/// The signature of a finding of `check` on the (shrunk) `program`.
pub fn signature(check: &str, program: &Program) -> String {
    let text = format!("{check}\n{}", skeleton(program));
    format!("{:016x}", fnv1a64(text.as_bytes()))
}

/// New names in order of first appearance.
#[derive(Default)]
struct Names {
    map: HashMap<String, String>,
}

impl Names {
    fn rename(&mut self, name: &str) -> String {
        let next = self.map.len();
        self.map
            .entry(name.to_string())
            .or_insert_with(|| format!("v{next}"))
            .clone()
    }
}

fn expr(e: &Expr, names: &mut Names, out: &mut String) {
    let e = e.strip_parens();
    let op = match &e.kind {
        ExprKind::Var(x) => return out.push_str(&names.rename(&x.name)),
        // As `teil fmt` prints literals: the shortest decimal that reads back to the same bits.
        ExprKind::Lit(v) => {
            let _ = write!(out, "{}", v.value);
            return;
        }
        ExprKind::Error => return out.push('?'),
        ExprKind::Paren(_) => unreachable!("parentheses were stripped"),
        ExprKind::Binary(op, ..) => op.prefix_keyword(),
        ExprKind::Prod(..) => "prod",
        ExprKind::Reduce(op, ..) => op.keyword(),
        ExprKind::Transp(..) => "transp",
        ExprKind::Diag(..) => "diag",
        ExprKind::Contr(..) => "contr",
        ExprKind::Expa(..) => "expa",
        ExprKind::Proj(..) => "proj",
        ExprKind::Func(f, _) => f.keyword(),
        ExprKind::Func2(f, ..) => f.keyword(),
        ExprKind::Convert(t, _) => t.keyword(),
    };
    out.push_str(op);
    out.push('(');
    for (i, c) in e.children().into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        expr(c, names, out);
    }
    out.push(')');
}

/// 64-bit FNV-1a: stable across platforms and releases, unlike `std`'s hashers.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Program {
        let parsed = teil::parse(text);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        parsed.program
    }

    #[test]
    fn renames_in_order_of_appearance_and_drops_the_numbers() {
        let p = parse(
            "output var h0 : [1 3]\ninput var t2x3_0 : [2 1 3]\nh0 = redmax 1 (t2x3_0 / t2x3_0)\n",
        );
        assert_eq!(skeleton(&p), "v0 = redmax(div(v1, v1))\n");
        let q = parse(
            "var a : [3 3]\nvar b : [3]\nvar c : []\nb = expa 1 3 (proj 1 2 (a ^[1 2]))\nc = red+ 1 (0 * b) # -2.5\n",
        );
        assert_eq!(
            skeleton(&q),
            "v0 = expa(proj(transp(v1)))\nv2 = prod(red+(mul(0, v0)), -2.5)\n"
        );
    }

    #[test]
    fn the_same_bug_in_two_shapes_shares_a_signature() {
        let a = parse("input var a : [2 1]\noutput var b : [1]\nb = redmax 1 (a / a)\n");
        let b = parse("inout var r : [2 1 4]\ninput var t : [5 2 1 4]\nr = redmax 2 (t / t)\n");
        assert_eq!(skeleton(&a), skeleton(&b));
        assert_eq!(signature("wrong value", &a), signature("wrong value", &b));
        // Another check, another reduction, another operand: another signature.
        assert_ne!(signature("wrong value", &a), signature("crash", &a));
        let c = parse("input var a : [2 1]\noutput var b : [1]\nb = redmin 1 (a / a)\n");
        assert_ne!(signature("wrong value", &a), signature("wrong value", &c));
        let d = parse("input var a : [2 1]\noutput var b : [1]\nb = redmax 1 (a * a)\n");
        assert_ne!(signature("wrong value", &a), signature("wrong value", &d));
    }

    #[test]
    fn signature_is_fnv1a_of_the_check_and_the_skeleton() {
        // FNV-1a's published test vectors: the empty string and "a".
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        let p = parse("var x : [1]\nx = x\n");
        assert_eq!(
            signature("fast", &p),
            format!("{:016x}", fnv1a64(b"fast\nv0 = v0\n"))
        );
    }
}
