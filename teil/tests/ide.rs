//! The analysis layer (`teil::ide`): answers on small programs, quick fixes that fix, comments
//! kept by the formatter, and a property test over the parser fuzzer's inputs (no panic, every
//! span inside the text, answers consistent with `teil check`).

#[path = "parser_fuzz/input.rs"]
mod input;

use input::{decode, Corpus, Input};
use proptest::prelude::*;
use std::path::Path;
use std::sync::OnceLock;
use teil::ast::ElemType;
use teil::fmt::Style;
use teil::ide::{Analysis, CompletionKind, SourceKind, SymbolKind};

fn teil(src: &str) -> Analysis {
    Analysis::new(src, SourceKind::Teil)
}

/// The byte offset of the `n`-th occurrence (from 0) of `needle`.
fn at(src: &str, needle: &str, n: usize) -> usize {
    src.match_indices(needle)
        .nth(n)
        .unwrap_or_else(|| panic!("`{needle}` #{n} not in the text"))
        .0
}

const MATMUL: &str = "\
input alloc A : [3, 4]
input alloc B : [4, 5]
output alloc C : [3, 5]
C = contr 2 3 (prod A B)
";

#[test]
fn hover_gives_shape_rule_and_operand_shapes() {
    let a = teil(MATMUL);
    let h = a.hover(at(MATMUL, "contr", 0)).expect("hover");
    assert_eq!(&MATMUL[h.range.clone()], "contr 2 3 (prod A B)");
    assert_eq!(h.shape, Some(vec![3, 5]));
    assert_eq!(h.rule, Some("T-Contr"));
    assert_eq!(
        h.operands,
        vec![("(prod A B)".to_string(), Some(vec![3, 4, 4, 5]))]
    );
    assert!(
        h.markdown
            .starts_with("`contr 2 3 (prod A B)` : `[3, 5]` by T-Contr"),
        "{}",
        h.markdown
    );
    // Inside the parentheses, the product; on `A`, the variable with its declaration.
    let h = a.hover(at(MATMUL, "prod", 0)).expect("hover");
    assert_eq!((h.shape, h.rule), (Some(vec![3, 4, 4, 5]), Some("T-Prod")));
    let h = a.hover(at(MATMUL, "A B)", 0)).expect("hover");
    assert_eq!((h.shape, h.rule), (Some(vec![3, 4]), Some("T-Var")));
    assert_eq!(h.declaration.as_deref(), Some("input alloc A : [3, 4]"));
    assert!(h.markdown.contains("input variable"), "{}", h.markdown);
    // The scalar rules are named by which operand is the scalar.
    let src = "alloc s : []\nalloc A : [2]\nA = s * A\nA = A / s\nA = A * A\n";
    let a = teil(src);
    // On the operator, the innermost expression is the binary one.
    let rule = |op, n| a.hover(at(src, op, n)).and_then(|h| h.rule);
    assert_eq!(
        [rule("*", 0), rule("/", 0), rule("*", 1)],
        [Some("T-SMul"), Some("T-SDiv"), Some("T-Mul")]
    );
}

#[test]
fn programs_with_errors_still_answer_for_the_parts_that_check() {
    let src = "alloc A : [2, 3]\nalloc B : [3, 2]\nA = add (transp 1 2 B) (add A B)\n";
    let a = teil(src);
    assert_eq!(a.diagnostics().len(), 1);
    assert_eq!(a.diagnostics()[0].code.as_str(), "E0302");
    let good = a.hover(at(src, "transp", 0)).expect("hover");
    assert_eq!(
        (good.shape, good.rule),
        (Some(vec![2, 3]), Some("T-Transp"))
    );
    let bad = a.hover(at(src, "add A B", 0)).expect("hover");
    assert_eq!((bad.shape, bad.rule), (None, None));
    assert!(bad.markdown.contains("shape unknown"), "{}", bad.markdown);
    // Its operands still have their shapes.
    assert_eq!(bad.operands[1], ("B".to_string(), Some(vec![3, 2])));
    // And with a syntax error elsewhere, the statements that parse are answered.
    let src = "alloc A : [2]\nA = add A (\nA = add A A\n";
    let a = teil(src);
    assert!(a.diagnostics().iter().any(|d| d.code.as_str() == "E0001"));
    let h = a.hover(at(src, "add A A", 0)).expect("hover");
    assert_eq!(h.shape, Some(vec![2]));
}

#[test]
fn definition_and_references() {
    let a = teil(MATMUL);
    let use_of_a = at(MATMUL, "A B)", 0);
    let def = a.goto_definition(use_of_a).expect("definition");
    assert_eq!(def, at(MATMUL, "A :", 0)..at(MATMUL, "A :", 0) + 1);
    let refs = a.references(use_of_a);
    assert_eq!(refs, vec![def.clone(), use_of_a..use_of_a + 1]);
    // From the statement's target.
    let c_target = at(MATMUL, "C =", 0);
    assert_eq!(a.references(c_target).len(), 2);
    assert_eq!(
        a.goto_definition(c_target),
        Some(at(MATMUL, "C :", 0)..at(MATMUL, "C :", 0) + 1)
    );
    // Not on a name: nothing.
    assert_eq!(a.goto_definition(at(MATMUL, "contr", 0)), None);
    assert!(a.references(at(MATMUL, "contr", 0)).is_empty());
}

#[test]
fn symbols_and_inlay_hints() {
    let a = teil(MATMUL);
    let symbols = a.document_symbols();
    let summary: Vec<(String, String, SymbolKind)> = symbols
        .iter()
        .map(|s| (s.name.clone(), s.detail.clone(), s.kind))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("A".into(), "input [3, 4]".into(), SymbolKind::Declaration),
            ("B".into(), "input [4, 5]".into(), SymbolKind::Declaration),
            ("C".into(), "output [3, 5]".into(), SymbolKind::Declaration),
            (
                "C = contr 2 3 (prod A B)".into(),
                "[3, 5]".into(),
                SymbolKind::Statement
            ),
        ]
    );
    let hints = a.inlay_hints();
    assert_eq!(hints.len(), 1);
    assert_eq!(hints[0].label, ": [3, 5]");
    assert_eq!(hints[0].offset, MATMUL.len() - 1);
}

const ELEM: &str = "\
input alloc A : f32[3, 4]
input var B : f64[4 5]
output alloc C : f32[3, 5]
inout alloc D : [3, 4]
C = contr 2 3 (prod (exp A) (f32 B))
D = max (f64 (sqrt A)) (abs D)
";

/// Once a program names an element type, every type is shown with its own, `f64` included;
/// functions and conversions are named by their rules and explained.
#[test]
fn hover_shows_element_types_rules_and_functions() {
    let a = teil(ELEM);
    assert!(a.diagnostics().is_empty(), "{:?}", a.diagnostics());
    let h = a.hover(at(ELEM, "contr", 0)).expect("hover");
    assert_eq!((h.shape, h.elem), (Some(vec![3, 5]), Some(ElemType::F32)));
    assert!(
        h.markdown
            .starts_with("`contr 2 3 (prod (exp A) (f32 B))` : `f32[3, 5]` by T-Contr"),
        "{}",
        h.markdown
    );
    let h = a.hover(at(ELEM, "exp", 0)).expect("hover");
    assert_eq!(&ELEM[h.range.clone()], "exp A");
    assert_eq!((h.rule, h.elem), (Some("T-Func"), Some(ElemType::F32)));
    assert_eq!(h.operands, vec![("A".to_string(), Some(vec![3, 4]))]);
    assert_eq!(h.operand_elems, vec![Some(ElemType::F32)]);
    assert_eq!(
        h.markdown,
        "`exp A` : `f32[3, 4]` by T-Func\n\n`exp e`: e^x of each element, correctly rounded \
         in the operand's element type (here `f32`).\n\noperands:\n- `A` : `f32[3, 4]`"
    );
    // A conversion: the result's element type, and the operand's.
    let h = a.hover(at(ELEM, "f32 B", 0)).expect("hover");
    assert_eq!((h.rule, h.elem), (Some("T-Conv"), Some(ElemType::F32)));
    assert_eq!(h.operand_elems, vec![Some(ElemType::F64)]);
    assert!(
        h.markdown.starts_with("`f32 B` : `f32[4, 5]` by T-Conv"),
        "{}",
        h.markdown
    );
    assert!(h.markdown.contains("- `B` : `f64[4, 5]`"), "{}", h.markdown);
    assert!(h.markdown.contains("ties to even"), "{}", h.markdown);
    let h = a.hover(at(ELEM, "f64 (sqrt", 0)).expect("hover");
    assert!(
        h.markdown.contains("to binary64, exactly"),
        "{}",
        h.markdown
    );
    // max: typed like `+`, NaN propagating, -0 < +0; sqrt rounds in f32 here.
    let h = a.hover(at(ELEM, "max", 0)).expect("hover");
    assert_eq!((h.rule, h.elem), (Some("T-Func2"), Some(ElemType::F64)));
    assert!(
        h.markdown
            .starts_with("`max (f64 (sqrt A)) (abs D)` : `f64[3, 4]` by T-Func2"),
        "{}",
        h.markdown
    );
    assert!(
        h.markdown.contains(
            "NaN propagating, -0 < +0), exact in the operands' element type (here `f64`)"
        ),
        "{}",
        h.markdown
    );
    let h = a.hover(at(ELEM, "sqrt", 0)).expect("hover");
    assert!(h.markdown.contains("(here `f32`)"), "{}", h.markdown);
    let h = a.hover(at(ELEM, "abs", 0)).expect("hover");
    assert!(
        h.markdown.contains("`abs e`: the absolute value"),
        "{}",
        h.markdown
    );
    // A variable: its declared element type, the declaration as written.
    let h = a.hover(at(ELEM, "D)", 0)).expect("hover");
    assert_eq!(h.elem, Some(ElemType::F64));
    assert!(
        h.markdown.starts_with("`D` : `f64[3, 4]` by T-Var"),
        "{}",
        h.markdown
    );
    assert_eq!(h.declaration.as_deref(), Some("inout alloc D : [3, 4]"));
    // A declaration's element type explains itself.
    let h = a.hover(at(ELEM, "f32[", 0) + 1).expect("hover");
    assert_eq!(&ELEM[h.range.clone()], "f32");
    assert_eq!(
        (h.shape, h.elem, h.rule),
        (Some(vec![3, 4]), Some(ElemType::F32), None)
    );
    assert!(
        h.markdown
            .starts_with("`f32` : the element type of `A`\n\nIEEE 754 binary32"),
        "{}",
        h.markdown
    );
    assert!(h
        .markdown
        .ends_with("declared `input alloc A : f32[3, 4]`: input variable"));
    let h = a.hover(at(ELEM, "f64[", 0)).expect("hover");
    assert!(h
        .markdown
        .starts_with("`f64` : the element type of `B`\n\nIEEE 754 binary64"));
    assert!(h.markdown.contains("the default"), "{}", h.markdown);
    assert_eq!(a.goto_definition(at(ELEM, "f64[", 0)), None);
    // The shapes panel carries the element types too.
    let facts = a.statement_expressions(at(ELEM, "max", 0));
    let elems: Vec<_> = facts.iter().map(|f| (f.text.as_str(), f.elem)).collect();
    assert_eq!(
        elems,
        [
            ("max (f64 (sqrt A)) (abs D)", Some(ElemType::F64)),
            ("(f64 (sqrt A))", Some(ElemType::F64)),
            ("f64 (sqrt A)", Some(ElemType::F64)),
            ("(sqrt A)", Some(ElemType::F32)),
            ("sqrt A", Some(ElemType::F32)),
            ("A", Some(ElemType::F32)),
            ("(abs D)", Some(ElemType::F64)),
            ("abs D", Some(ElemType::F64)),
            ("D", Some(ElemType::F64)),
        ]
    );
}

#[test]
fn symbols_and_inlay_hints_show_element_types() {
    let a = teil(ELEM);
    let details: Vec<String> = a.document_symbols().into_iter().map(|s| s.detail).collect();
    assert_eq!(
        details,
        [
            "input f32[3, 4]",
            "input f64[4, 5]",
            "output f32[3, 5]",
            "inout f64[3, 4]",
            "f32[3, 5]",
            "f64[3, 4]"
        ]
    );
    let labels: Vec<String> = a.inlay_hints().into_iter().map(|h| h.label).collect();
    assert_eq!(labels, [": f32[3, 5]", ": f64[3, 4]"]);
    let elems: Vec<_> = a.statements().into_iter().map(|s| s.elem).collect();
    assert_eq!(elems, [Some(ElemType::F32), Some(ElemType::F64)]);
    // A program that writes only `f64` names an element type: it is shown.
    let src = "alloc A : f64[2]\nA = A\n";
    assert_eq!(teil(src).inlay_hints()[0].label, ": f64[2]");
    // One that names none reads as it always did (`[2]`), element types known all the same.
    let src = "alloc A : [2]\nA = exp A\n";
    let a = teil(src);
    assert_eq!(a.inlay_hints()[0].label, ": [2]");
    assert_eq!(a.document_symbols()[0].detail, "[2]");
    let h = a.hover(at(src, "exp", 0)).expect("hover");
    assert_eq!((h.elem, h.rule), (Some(ElemType::F64), Some("T-Func")));
    assert!(
        h.markdown
            .starts_with("`exp A` : `[2]` by T-Func\n\n`exp e`: e^x"),
        "{}",
        h.markdown
    );
    // Element types that conflict (E0311): the shape stands, the element type is unknown.
    let src = "alloc A : f32[2]\nalloc B : [2]\nA = A + B\n";
    let a = teil(src);
    assert_eq!(a.diagnostics()[0].code.as_str(), "E0311");
    let h = a.hover(at(src, "A + B", 0) + 2).expect("hover");
    assert_eq!((h.shape, h.elem), (Some(vec![2]), None));
    assert_eq!(h.operand_elems, [Some(ElemType::F32), Some(ElemType::F64)]);
    assert!(
        h.markdown.starts_with(
            "`A + B` : `[2]` by T-Add (element type unknown: this does not type-check)"
        ),
        "{}",
        h.markdown
    );
    assert_eq!(a.inlay_hints()[0].label, ": [2]");
}

/// The completion list at the first `|` of `marked`, as (label, kind) pairs, with the text its
/// range replaces.
fn complete(marked: &str, kind: SourceKind) -> Option<(String, Vec<(String, CompletionKind)>)> {
    let offset = marked.find('|').expect("a cursor");
    let src = marked.replacen('|', "", 1);
    let c = Analysis::new(src.as_str(), kind).completions(offset)?;
    assert!(
        c.range.start <= offset && offset == c.range.end,
        "{:?}",
        c.range
    );
    let items = c.items.iter().map(|i| (i.label.clone(), i.kind)).collect();
    Some((src[c.range].to_string(), items))
}

fn labels(marked: &str) -> Option<Vec<String>> {
    complete(marked, SourceKind::Teil).map(|(_, items)| items.into_iter().map(|i| i.0).collect())
}

#[test]
fn completion_follows_the_grammar() {
    let decls = "input alloc A : f32[3]\ninput alloc B : [3]\noutput alloc C : f32[3]\n";
    let vars = ["A", "B", "C"];
    let funcs = ["exp", "log", "sqrt", "tanh", "erf", "abs", "max", "min"];
    let ops = [
        "add", "sub", "mul", "div", "prod", "red+", "red*", "redmax", "redmin", "transp", "diag",
        "contr", "expa", "proj",
    ];
    let everything: Vec<String> = vars
        .iter()
        .chain(&funcs)
        .chain(&["f32", "f64"])
        .chain(&ops)
        .map(|s| s.to_string())
        .collect();
    // Where an expression is expected: the variables, functions, conversions, operations.
    for stmt in [
        "C = |",
        "C = A + |",
        "C = A * (|",
        "C = ex|",
        "C = f3|",
        "C = (A # B) .[1 2] - |",
        "C = add A B / |",
        "C = exp A - |",
        "C = -2 * |",
        "C = contr 1 2 (A # |",
    ] {
        let got = labels(&format!("{decls}{stmt}"));
        assert_eq!(got.as_ref(), Some(&everything), "{stmt}");
    }
    // Where an operand of a prefix application is expected: an atom, so the variables alone.
    for stmt in [
        "C = add A |",
        "C = exp |",
        "C = max A |",
        "C = f32 |",
        "C = red+ 1 |",
        "C = contr 1 2 |",
        "C = add (exp A) |",
        "C = max -1.5 |",
        "C = transp 1 2 (A # B) + max (A) |",
    ] {
        assert_eq!(
            labels(&format!("{decls}{stmt}")).as_deref(),
            Some(&vars.map(String::from)[..]),
            "{stmt}"
        );
    }
    // Nothing where a number, an operator or a new item comes, or in a comment.
    for stmt in [
        "C = A |",
        "C = red+ |",
        "C = contr 1 |",
        "C = A .[|",
        "C = A .[1 |",
        "C = exp A |",
        "C = (A + B) |",
        "C = A\n|",
        "C = 1|",
        "C = -|",
        "C = add A -|",
        "C = A // e|",
        "|",
        "C|",
    ] {
        assert_eq!(labels(&format!("{decls}{stmt}")), None, "{stmt}");
    }
    // The word being typed is the range replaced; kinds tell functions from conversions.
    let (word, items) = complete(&format!("{decls}C = sq|rt A"), SourceKind::Teil).expect("items");
    assert_eq!(word, "sq");
    let src = format!("{decls}C = sqrt A");
    let c = teil(&src).completions(at(&src, "rt A", 0)).expect("items");
    assert_eq!(&src[c.replace.clone()], "sqrt");
    // No word before the offset: nothing replaced, whatever follows.
    let c = teil(&src).completions(at(&src, "sqrt", 0)).expect("items");
    assert_eq!(
        (c.range.clone(), c.replace),
        (c.range.start..c.range.start, c.range)
    );
    let kind = |l: &str| items.iter().find(|i| i.0 == l).map(|i| i.1);
    assert_eq!(kind("A"), Some(CompletionKind::Variable));
    assert_eq!(kind("sqrt"), Some(CompletionKind::Function));
    assert_eq!(kind("max"), Some(CompletionKind::Function));
    assert_eq!(kind("f64"), Some(CompletionKind::Conversion));
    assert_eq!(kind("contr"), Some(CompletionKind::Operation));
    let (word, _) = complete(&format!("{decls}C = red+|"), SourceKind::Teil).expect("items");
    assert_eq!(word, "red+");
    // After a declaration's `:`, the element types, f32 first (f64 is the default).
    for decl in [
        "alloc X : |",
        "input var X : |[3]",
        "alloc X : f|",
        "output alloc X :|",
    ] {
        let got = complete(&format!("{decls}{decl}"), SourceKind::Teil).map(|(_, items)| items);
        let want = vec![
            ("f32".to_string(), CompletionKind::ElemType),
            ("f64".to_string(), CompletionKind::ElemType),
        ];
        assert_eq!(got, Some(want), "{decl}");
    }
    for decl in ["alloc |", "alloc X |", "alloc X : [|", "alloc X : f32[3|"] {
        assert_eq!(complete(decl, SourceKind::Teil), None, "{decl}");
    }
    // Details and documentation.
    let src = format!("{decls}C = ");
    let c = teil(&src).completions(src.len()).expect("items");
    let item = |l: &str| c.items.iter().find(|i| i.label == l).expect(l).clone();
    assert_eq!(item("A").detail, "input f32[3]");
    assert_eq!(item("A").documentation, "declared `input alloc A : f32[3]`");
    assert_eq!(item("max").detail, "max e0 e1");
    assert_eq!(
        item("max").documentation,
        "`max e0 e1`: the larger of each pair of elements (IEEE 754-2019 maximum: NaN \
         propagating, -0 < +0), exact in the operands' element type.\n\nTyping rule: T-Func2."
    );
    assert!(item("erf")
        .documentation
        .contains("correctly rounded in the operand's element type"));
    assert_eq!(item("f32").detail, "f32 e");
    assert!(item("f32").documentation.contains("Typing rule: T-Conv."));
    let src = "alloc X : ";
    let c = teil(src).completions(src.len()).expect("items");
    assert_eq!(c.items[0].detail, "IEEE 754 binary32");
    assert!(c.items[1].documentation.contains("the default"));
    // Index notation: the element types of its declarations only.
    let tin = |m: &str| complete(m, SourceKind::Tin).map(|(_, i)| i.len());
    assert_eq!(tin("alloc A : |"), Some(2));
    assert_eq!(tin("alloc A : [3]\nA(i) = |"), None);
    // Past the end or inside a character: nothing, and no panic.
    let a = teil("alloc é : [2]");
    assert_eq!(a.completions(7), None);
    assert_eq!(a.completions(100), None);
}

/// Applies the first fix of the only diagnostic and checks the result.
fn fixed(src: &str) -> (String, String) {
    let a = teil(src);
    let actions = a.code_actions(0..src.len());
    assert_eq!(actions.len(), 1, "{:?}", a.diagnostics());
    let (_, fix) = actions[0];
    let text = fix.apply(src).expect("applies");
    (fix.title.clone(), text)
}

#[test]
fn quick_fixes_are_data_and_fix_the_program() {
    let cases = [
        // E0305: the nearest contraction of equal extents.
        (
            "alloc A : [2, 3]\nalloc B : [3, 4]\nalloc C : [2, 4]\nC = (A # B) .[2 4]\n",
            "replace with `.[2 3]`",
            "C = (A # B) .[2 3]",
        ),
        // E0301: the declared name.
        (
            "alloc Alpha : [2]\nAlpha = add Alpha Alpa\n",
            "replace with `Alpha`",
            "Alpha = add Alpha Alpha",
        ),
        // E0202: a transposition of the right-hand side, parenthesised when needed.
        (
            "alloc A : [2, 3]\nalloc B : [3, 2]\nA = add B B\n",
            "apply `^[1 2]`",
            "A = (add B B) ^[1 2]",
        ),
        // E0302: a transposition of the right operand.
        (
            "alloc A : [2, 3]\nalloc B : [3, 2]\nA = A + B\n",
            "apply `^[1 2]`",
            "A = A + B ^[1 2]",
        ),
    ];
    for (src, title, line) in cases {
        let (t, text) = fixed(src);
        assert_eq!(t, title, "{src}");
        assert!(text.contains(line), "{src}\n->\n{text}");
        assert!(teil::compile(&text).is_ok(), "{text}");
    }
    // W0002: the useless transposition is removed; the program stays well-typed.
    let src = "alloc A : [2, 2]\nA = transp 1 1 A\n";
    let (t, text) = fixed(src);
    assert_eq!(
        (t.as_str(), text.as_str()),
        ("remove the transposition", "alloc A : [2, 2]\nA = A\n")
    );
    // Code actions only for diagnostics in the range asked about.
    let src = "alloc Alpha : [2]\nAlpha = add Alpha Alpa\n";
    let a = teil(src);
    assert!(a.code_actions(0..5).is_empty());
    let typo = at(src, "Alpa", 0);
    assert_eq!(a.code_actions(typo..typo).len(), 1);
}

/// The quick fixes of syntax errors: a misspelled keyword is replaced by the keyword, an
/// assignment operator of another language by `=`; the fixed text is a program that checks.
#[test]
fn syntax_quick_fixes_fix_the_program() {
    let cases = [
        (
            "alloc A : [2, 3, 3]\nalloc C : [2]\nC = contract 2 3 A\n",
            "replace with `contr`",
            "C = contr 2 3 A",
        ),
        (
            "alloc B : [3, 3]\nalloc v : [3]\nv = reduce+ 1 B\n",
            "replace with `red+`",
            "v = red+ 1 B",
        ),
        (
            "alloc B : [3, 3]\nalloc v : [3]\nv = sum* 1 B\n",
            "replace with `red*`",
            "v = red* 1 B",
        ),
        (
            "alloc B : [3, 3]\nB = TRANSPOSE 1 2 B\n",
            "replace with `transp`",
            "B = transp 1 2 B",
        ),
        (
            "alloc A : [2]\nallocate B : [2]\nB = A\n",
            "replace with `alloc`",
            "alloc B : [2]",
        ),
        (
            "outptu var B : [2]\nB = 2 * B\n",
            "replace with `output`",
            "output var B : [2]",
        ),
        (
            "input var A : [2]\noutput var C : [2]\nC := A + A\n",
            "replace `:=` with `=`",
            "C = A + A",
        ),
        (
            "input var A : [2]\noutput var C : [2]\nC <- A + A\n",
            "replace `<-` with `=`",
            "C = A + A",
        ),
        (
            "input var A : [2]\noutput var C : [2]\nC == A + A\n",
            "replace `==` with `=`",
            "C = A + A",
        ),
    ];
    for (src, title, line) in cases {
        let (t, text) = fixed(src);
        assert_eq!(t, title, "{src}");
        assert!(text.contains(line), "{src}\n->\n{text}");
        assert!(teil::compile(&text).is_ok(), "{text}");
    }
}

/// While a text has a syntax error, the editor shows no warning of the initialisation
/// analysis: `C` is assigned by the statement that does not parse.
#[test]
fn no_initialisation_warnings_while_a_syntax_error_stands() {
    let broken = "input var A : [2, 2]\noutput var C : [2, 2]\nC = add A (transp 1 2 A\n";
    let codes: Vec<&str> = teil(broken)
        .diagnostics()
        .iter()
        .map(|d| d.code.as_str())
        .collect();
    assert_eq!(codes, ["E0001"]);
    // Without the statement at all, the warning is right and shown.
    let unassigned = "input var A : [2, 2]\noutput var C : [2, 2]\n";
    let codes: Vec<&str> = teil(unassigned)
        .diagnostics()
        .iter()
        .map(|d| d.code.as_str())
        .collect();
    assert_eq!(codes, ["W0003"]);
}

#[test]
fn format_keeps_comments_in_both_syntaxes() {
    let src = "\
// matrix product
input var A : [3 4]   // left
input var B : [4 5]

// the result
output var C : [3 5]
C = (A # B) .[2 3] // T-Contr
// trailing é🦀
";
    let a = teil(src);
    let prefix = a.format(Style::Prefix).expect("formats");
    assert_eq!(
        prefix,
        "\
// matrix product
input alloc A : [3, 4] // left
input alloc B : [4, 5]

// the result
output alloc C : [3, 5]
C = contr 2 3 (prod A B) // T-Contr
// trailing é🦀
"
    );
    let infix = a.format(Style::Infix).expect("formats");
    assert_eq!(teil(&infix).format(Style::Infix).as_ref(), Ok(&infix));
    assert_eq!(teil(&prefix).format(Style::Prefix).as_ref(), Ok(&prefix));
    assert_eq!(infix.matches("//").count(), 5);
    // A comment inside a multi-line statement moves before it; nothing is lost.
    let src = "alloc A : [2]\nA = add A // first operand\n  A\n";
    assert_eq!(
        teil(src).format(Style::Prefix).expect("formats"),
        "alloc A : [2]\n// first operand\nA = add A A\n"
    );
    // Syntax errors: no formatting. Index notation: not supported.
    assert!(teil("alloc A : [2\n").format(Style::Prefix).is_err());
    let tin = Analysis::new("alloc A : [2]\nA(i) = A(i)\n", SourceKind::Tin);
    assert_eq!(
        tin.format(Style::Prefix),
        Err(teil::ide::FormatError::Unsupported)
    );
}

#[test]
fn index_notation_gets_diagnostics_and_symbols() {
    let src = "alloc A : [3]\nalloc B : [3, 4]\nA(i) = B(i, k)\n";
    let a = Analysis::new(src, SourceKind::Tin);
    assert!(a.diagnostics().is_empty(), "{:?}", a.diagnostics());
    let names: Vec<String> = a.document_symbols().into_iter().map(|s| s.name).collect();
    assert_eq!(&names[..2], ["A", "B"]);
    let bad = Analysis::new(
        "alloc A : [3]\nalloc B : [3]\nA(i) = B(i, j)\n",
        SourceKind::Tin,
    );
    assert_eq!(bad.diagnostics()[0].code.as_str(), "E0502");
}

fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(|| Corpus::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("..")))
}

/// Every answer for one text at a spread of offsets (inside characters and past the end
/// included) stays inside the text, and the diagnostics are those of `teil check`.
fn every_answer_is_sound(src: &str, kind: SourceKind) -> Result<(), String> {
    let a = Analysis::new(src, kind);
    let expected = match kind {
        SourceKind::Teil => teil::compile(src),
        SourceKind::Tin => teil::guard::index_notation(src),
    };
    let expected = match expected {
        Ok((_, w)) => w,
        Err(d) => d,
    };
    if a.diagnostics() != expected.as_slice() {
        return Err("diagnostics differ from teil check".into());
    }
    let inside = |s: &teil::Span| {
        s.start <= s.end
            && s.end <= src.len()
            && src.is_char_boundary(s.start)
            && src.is_char_boundary(s.end)
    };
    let step = (src.len() / 40).max(1);
    for offset in (0..src.len() + 3).step_by(step) {
        if let Some(h) = a.hover(offset) {
            if !inside(&h.range) || offset < h.range.start || h.range.end < offset {
                return Err(format!("hover range {:?} at {offset}", h.range));
            }
        }
        if let Some(d) = a.goto_definition(offset) {
            if !inside(&d) {
                return Err(format!("definition {d:?}"));
            }
        }
        if let Some(bad) = a.references(offset).iter().find(|s| !inside(s)) {
            return Err(format!("reference {bad:?}"));
        }
        if let Some(c) = a.completions(offset) {
            if !inside(&c.range) || c.range.end != offset || c.items.is_empty() {
                return Err(format!("completion range {:?} at {offset}", c.range));
            }
            if !inside(&c.replace) || c.replace.start != c.range.start || c.replace.end < offset {
                return Err(format!("completion replace {:?} at {offset}", c.replace));
            }
            if src[c.replace.clone()].contains(['\n', '\r']) {
                return Err(format!("completion range {:?} spans lines", c.range));
            }
        }
    }
    for s in a.document_symbols() {
        if !inside(&s.range) || !inside(&s.selection) {
            return Err(format!("symbol {s:?}"));
        }
    }
    for h in a.inlay_hints() {
        if h.offset > src.len() {
            return Err(format!("hint {h:?}"));
        }
    }
    for (_, fix) in a.code_actions(0..src.len()) {
        if fix.apply(src).is_none() {
            return Err(format!("fix {fix:?} does not apply"));
        }
    }
    if let Ok(text) = a.format(Style::Infix) {
        let comments = |t: &str| teil::lexer::lex_with_comments(t).2.len();
        if comments(&text) != comments(src) {
            return Err(format!("formatting lost comments:\n{text}"));
        }
        if teil(&text).format(Style::Infix).as_ref() != Ok(&text) {
            return Err(format!("formatting is not idempotent:\n{text}"));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 600,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The parser fuzzer's input space: raw text, corpus mutations and splices, deep nesting,
    /// token soup, index notation.
    #[test]
    fn analysis_never_panics_and_stays_in_the_text(
        bytes in proptest::collection::vec(any::<u8>(), 0..400)
    ) {
        let (src, kind) = match decode(&bytes, corpus()) {
            Input::Teil(s) => (s, SourceKind::Teil),
            Input::IndexNotation(s) => (s, SourceKind::Tin),
            Input::Einsum(..) => return Ok(()),
        };
        if let Err(e) = every_answer_is_sound(&src, kind) {
            prop_assert!(false, "{e}\ninput: {src:?}");
        }
    }
}

/// Every corpus file, as it is: the answers are sound, and its comments survive formatting.
#[test]
fn corpus_files_are_answered_soundly() {
    let c = corpus();
    assert!(c.teil.len() > 50, "corpus not found");
    for src in &c.teil {
        every_answer_is_sound(src, SourceKind::Teil).unwrap_or_else(|e| panic!("{e}\n{src}"));
    }
    for src in &c.tin {
        every_answer_is_sound(src, SourceKind::Tin).unwrap_or_else(|e| panic!("{e}\n{src}"));
    }
}
