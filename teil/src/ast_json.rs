//! The parsed AST as JSON: the input of `teil-check`, the checker extracted from the Coq proof
//! (proofs/teil_check.ml, proofs/README.md), which `teil check --ast-json` prints one line
//! per file of and `teil-cli/tests/proof_checker.rs` compares with the Rust checker.
//!
//! The form: `{"decls":[{"qualifier":null|"input"|"output"|"inout","name":"A",
//! "shape":[2,3],"elem":"f64"|"f32"}],"stmts":[{"target":"A","value":E}]}`, where an
//! expression `E` is an object whose `kind` names its node (`expr`).

use crate::ast::{BinOp, Decl, Expr, ExprKind, Program, Qualifier, RedOp};
use serde_json::{json, Value};

/// `p` in the form above.
pub fn program(p: &Program) -> Value {
    let decl = |d: &Decl| {
        let qualifier = d.qualifier.map(Qualifier::keyword);
        json!({ "qualifier": qualifier, "name": d.name.name, "shape": d.shape(), "elem": d.elem.keyword() })
    };
    let stmts = (p.stmts.iter())
        .map(|s| json!({ "target": s.target.name, "value": expr(&s.value) }))
        .collect::<Vec<_>>();
    json!({ "decls": p.decls.iter().map(decl).collect::<Vec<_>>(), "stmts": stmts })
}

/// One expression node: `{"kind":"var","name":..}`, `{"kind":"lit","value":"2.5",
/// "f32_finite":true}` (whether the decimal rounds to a finite binary32 value, T-Lit's premise
/// in an `f32` context; its binary64 value is finite, E0004),
/// `{"kind":"paren","e":..}`, `{"kind":"binary","op":"add"|"sub"|"mul"|"div","l":..,"r":..}`,
/// `{"kind":"prod","l":..,"r":..}`, `{"kind":"reduce","op":"red+"|..,"i":2,"e":..}`,
/// `{"kind":"transp"|"diag"|"contr","i":..,"j":..,"e":..}`, `{"kind":"expa","i":..,"n":..,
/// "e":..}`, `{"kind":"proj","i":..,"m":..,"e":..}`, `{"kind":"func","name":"exp"|"log"|
/// "sqrt"|"tanh"|"erf"|"abs","e":..}`, `{"kind":"func2","name":"max"|"min","l":..,"r":..}`,
/// `{"kind":"convert","to":"f32"|"f64","e":..}`; `{"kind":"error"}` stands for what did not
/// parse. Positions are 1-based, as written.
fn expr(e: &Expr) -> Value {
    let pair = |kind: &str, a: &str, x: u64, b: &str, y: u64, e: &Expr| json!({ "kind": kind, a: x, b: y, "e": expr(e) });
    match &e.kind {
        ExprKind::Var(v) => json!({ "kind": "var", "name": v.name }),
        ExprKind::Lit(c) => json!({
            "kind": "lit",
            "value": c.value.to_string(),
            "f32_finite": c.single.is_finite(),
        }),
        ExprKind::Func(f, a) => json!({ "kind": "func", "name": f.keyword(), "e": expr(a) }),
        ExprKind::Func2(f, a, b) => {
            json!({ "kind": "func2", "name": f.keyword(), "l": expr(a), "r": expr(b) })
        }
        ExprKind::Convert(t, a) => json!({ "kind": "convert", "to": t.keyword(), "e": expr(a) }),
        ExprKind::Paren(a) => json!({ "kind": "paren", "e": expr(a) }),
        ExprKind::Binary(op, a, b) => {
            let op = match op {
                BinOp::Add => "add",
                BinOp::Sub => "sub",
                BinOp::Mul => "mul",
                BinOp::Div => "div",
            };
            json!({ "kind": "binary", "op": op, "l": expr(a), "r": expr(b) })
        }
        ExprKind::Prod(a, b) => json!({ "kind": "prod", "l": expr(a), "r": expr(b) }),
        ExprKind::Reduce(op, i, a) => {
            let op: &str = RedOp::keyword(*op);
            json!({ "kind": "reduce", "op": op, "i": i.value, "e": expr(a) })
        }
        ExprKind::Transp(i, j, a) => pair("transp", "i", i.value, "j", j.value, a),
        ExprKind::Diag(i, j, a) => pair("diag", "i", i.value, "j", j.value, a),
        ExprKind::Contr(i, j, a) => pair("contr", "i", i.value, "j", j.value, a),
        ExprKind::Expa(i, n, a) => pair("expa", "i", i.value, "n", n.value, a),
        ExprKind::Proj(i, m, a) => pair("proj", "i", i.value, "m", m.value, a),
        ExprKind::Error => json!({ "kind": "error" }),
    }
}

#[cfg(test)]
mod tests {
    /// Every field of a small program, as the extracted checker reads it.
    #[test]
    fn a_program_as_json() {
        let parsed =
            crate::parse("input var a : [2 3]\nvar b : [3]\nb = red+ 1 (transp 1 2 (a * 2.5))\n");
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        assert_eq!(
            super::program(&parsed.program).to_string(),
            r#"{"decls":[{"elem":"f64","name":"a","qualifier":"input","shape":[2,3]},{"elem":"f64","name":"b","qualifier":null,"shape":[3]}],"stmts":[{"target":"b","value":{"e":{"e":{"e":{"e":{"kind":"binary","l":{"kind":"var","name":"a"},"op":"mul","r":{"f32_finite":true,"kind":"lit","value":"2.5"}},"kind":"paren"},"i":1,"j":2,"kind":"transp"},"kind":"paren"},"i":1,"kind":"reduce","op":"red+"}}]}"#
        );
    }
}
